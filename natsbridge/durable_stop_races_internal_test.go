package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// hangRecordWrite holds the keeper's lock as a write of the record the
// server does not answer would: until the keeper stops, or 10s. The
// returned channel says which ended it.
func hangRecordWrite(ctx context.Context, k *keeper) <-chan string {
	k.mu.Lock()
	write := make(chan string, 1)
	go func() {
		defer k.mu.Unlock()
		bound, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		select {
		case <-k.g.Stopping().Done():
			write <- "ended by the keeper's stop"
		case <-bound.Done():
			write <- "ended by its own bound"
		}
	}()
	return write
}

// TestDurableStopRacingShutdownWhileRecordWriteHangs: a Stop and a
// Shutdown of one durable watcher called at once, a write of its record
// in flight and unanswered, both return, the Shutdown within its ctx and
// a grace (a Stop that won the race must not hold the Shutdown past its
// ctx by the write's bound).
func TestDurableStopRacingShutdownWhileRecordWriteHangs(t *testing.T) {
	ctx, topic := ordersTopic(t)
	w, err := topic.Watch(ctx, WatchOptions{Durable: "d"})
	if err != nil {
		t.Fatal(err)
	}
	write := hangRecordWrite(ctx, w.d.keep)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		w.Stop()
	}()
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_ = w.Shutdown(sctx)
	if took := time.Since(start); took > 300*time.Millisecond+250*time.Millisecond {
		t.Errorf("Shutdown with a 300ms ctx took %v beside a Stop", took)
	}
	<-stopped
	if how := <-write; how != "ended by the keeper's stop" {
		t.Errorf("the write in flight %s", how)
	}
}

// TestDurableStopTwiceAtOnceWhileRecordWriteHangs: two Stops of one
// durable watcher at once, a write of its record in flight, both return
// without waiting out the write's bound.
func TestDurableStopTwiceAtOnceWhileRecordWriteHangs(t *testing.T) {
	ctx, topic := ordersTopic(t)
	w, err := topic.Watch(ctx, WatchOptions{Durable: "d"})
	if err != nil {
		t.Fatal(err)
	}
	write := hangRecordWrite(ctx, w.d.keep)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(w.Stop)
	}
	wg.Wait()
	if how := <-write; how != "ended by the keeper's stop" {
		t.Errorf("the write in flight %s: a Stop waited for it", how)
	}
}

// TestDurableStopInsideAllWhileRecordWriteHangs: a Stop called from
// inside an All loop, a write of the record in flight, returns and ends
// the loop, and the value handed to the loop is the only one handed out.
func TestDurableStopInsideAllWhileRecordWriteHangs(t *testing.T) {
	ctx, topic := ordersTopic(t)
	w, _ := servedReader(ctx, t, topic, 5, 0)
	var write <-chan string
	n := 0
	for range w.All() {
		n++
		if write == nil {
			write = hangRecordWrite(ctx, w.d.keep)
			w.Stop()
		}
	}
	if n == 0 {
		t.Fatal("All handed out nothing")
	}
	if how := <-write; how != "ended by the keeper's stop" {
		t.Errorf("the write in flight %s: Stop inside All waited for it", how)
	}
}

// infoFails is a durable consumer whose Info fails, as with the server
// gone.
type infoFails struct {
	jetstream.Consumer
}

var errInfoGone = errors.New("no server")

func (infoFails) Info(context.Context) (*jetstream.ConsumerInfo, error) { return nil, errInfoGone }

// TestDurableLostDeliveryUnknownTurnEndsTheRead: a durable reader that
// meets a delivery lost on the way and cannot ask the server whether it
// still has its turn ends its read with that error, so that the feed
// makes its consumer again (see readAll), rather than dropping what comes
// next or stalling.
func TestDurableLostDeliveryUnknownTurnEndsTheRead(t *testing.T) {
	ctx, topic := ordersTopic(t)
	_, d, err := topic.bindDurable(ctx, WatchOptions{Durable: "d"})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := topic.stream.Consumer(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	d.pin = "mine"
	f := newFeed(topic, "watcher", 1, topic.newWatcher(1, WatchOptions{}, nil, d), d)
	skipped := &deliveryMsg{
		reply: fmt.Sprintf("$JS.ACK.%s.d.1.3.7.%d.0", topic.streamID, time.Now().UnixNano()),
		hdr:   nats.Header{pinHeader: []string{"mine"}},
	}
	if err := f.consumeDurable(&oneDelivery{msg: skipped}, infoFails{cons}); !errors.Is(err, errInfoGone) {
		t.Fatalf("consumeDurable = %v, want the Info's error", err)
	}
}
