package natsbridge_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestHostile2EventsNextFirstReadRace: on a channel watcher, Events and
// Next race as first reads: neither panics, every value is read exactly
// once, in order, and Seq is the last value's once Stop has returned.
func TestHostile2EventsNextFirstReadRace(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "h2race", natsbridge.TopicOptions{})
	const n = 30
	publishAll(t, topic, 1, n)
	for iter := range 15 {
		w, err := topic.Watch(testCtx(t), natsbridge.WatchOptions{From: 1, Read: broadcast.ReadChannel})
		if err != nil {
			t.Fatal(err)
		}
		var (
			wg       sync.WaitGroup
			ch       <-chan Order
			panicked bool
			first    Order
			nextErr  error
		)
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			defer func() {
				if recover() != nil {
					panicked = true
				}
			}()
			ch = w.Events()
		})
		wg.Go(func() {
			<-start
			first, nextErr = w.Next(testCtx(t))
		})
		close(start)
		wg.Wait()
		if nextErr != nil {
			t.Fatalf("iter %d: Next: %v", iter, nextErr)
		}
		got := []Order{first}
		if !panicked {
			timeout := time.After(30 * time.Second)
			for len(got) < n {
				select {
				case v := <-ch:
					got = append(got, v)
				case <-timeout:
					t.Fatalf("iter %d: channel gave %d of %d", iter, len(got), n)
				}
			}
		} else {
			got = append(got, take(t, w, n-1)...)
		}
		w.Stop()
		got = append(got, drain(t, w)...)
		if want := span(1, n); !slices.Equal(ids(got), want) {
			t.Fatalf("iter %d (events panicked %v): read %v, want %v", iter, panicked, ids(got), want)
		}
		if w.Seq() != n {
			t.Fatalf("iter %d: Seq %d after Stop, want %d", iter, w.Seq(), n)
		}
	}
}

// TestHostile2StopMidAllOnChannelWatcher: Stop while All reads a channel
// watcher. All ends, every value it yielded is yielded once and in order,
// and a watcher resumed at Seq()+1 reads the rest: nothing lost.
func TestHostile2StopMidAllOnChannelWatcher(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "h2stopall", natsbridge.TopicOptions{})
	const n = 200
	publishAll(t, topic, 1, n)
	for iter := range 10 {
		w, err := topic.Watch(testCtx(t), natsbridge.WatchOptions{From: 1, QueueLength: 8})
		if err != nil {
			t.Fatal(err)
		}
		_ = w.Events()
		var got []Order
		stopAt := 5 + iter*7
		var stopped sync.WaitGroup
		done := make(chan struct{})
		go func() {
			defer close(done)
			for v := range w.All() {
				got = append(got, v)
				if len(got) == stopAt {
					stopped.Go(w.Stop)
				}
			}
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("iter %d: All did not end after Stop (read %d)", iter, len(got))
		}
		stopped.Wait()
		if want := span(1, len(got)); !slices.Equal(ids(got), want) {
			t.Fatalf("iter %d: All yielded %v", iter, ids(got))
		}
		if w.Seq() != uint64(len(got)) {
			t.Fatalf("iter %d: Seq %d after All of %d values", iter, w.Seq(), len(got))
		}
		r := watch(t, topic, natsbridge.WatchOptions{From: w.Seq() + 1})
		if len(got) < n {
			rest := take(t, r, n-len(got))
			if want := span(len(got)+1, n); !slices.Equal(ids(rest), want) {
				t.Fatalf("iter %d: resumed watcher read %v, want %v", iter, ids(rest), want)
			}
		}
		r.Stop()
	}
}

// TestHostile2ContextPrefixValue: Context after reading a prefix value
// returns parent itself, also after a traced value was read, on both
// read modes.
func TestHostile2ContextPrefixValue(t *testing.T) {
	tracer, _ := tracing(t)
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "h2prefix", natsbridge.TopicOptions{})
	spans := publishTraced(t, topic, tracer, 1, 2)
	parent := context.Background()
	// A queue watcher: on a channel watcher Context is that of the last
	// value placed on the channel, not read.
	for _, events := range []bool{false} {
		w := watch(t, topic, natsbridge.WatchOptions{From: 1}, Order{ID: -1}, Order{ID: -2})
		next := func() Order { return take(t, w, 1)[0] }
		if ctx := w.Context(parent); ctx != parent {
			t.Errorf("events=%v: Context before any read is not parent", events)
		}
		for _, want := range []int{-1, -2, 1, 2} {
			v := next()
			if v.ID != want {
				t.Fatalf("events=%v: read %d, want %d", events, v.ID, want)
			}
			checkContext(t, w, parent, v.ID, spans[v.ID])
		}
		w.Stop()
	}
}

// TestHostile2ContextConcurrentWithReads: Context and Seq called while a
// channel watcher is read (run under -race): once Seq gives a value's
// sequence, Context gives that value's trace context or a later one's.
func TestHostile2ContextConcurrentWithReads(t *testing.T) {
	tracer, _ := tracing(t)
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "h2ctxrace", natsbridge.TopicOptions{})
	const n = 300
	spans := publishTraced(t, topic, tracer, 1, n)
	byID := map[trace.SpanID]int{}
	for id, sc := range spans {
		byID[sc.SpanID()] = id
	}
	for _, events := range []bool{true, false} {
		w := watch(t, topic, natsbridge.WatchOptions{From: 1, QueueLength: 4})
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var bad []string
		var mu sync.Mutex
		for range 2 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					seq := w.Seq()
					sc := trace.SpanContextFromContext(w.Context(context.Background()))
					if seq == 0 {
						continue
					}
					id, ok := byID[sc.SpanID()]
					if !ok || uint64(id) < seq {
						mu.Lock()
						bad = append(bad, "seq "+itoa(int(seq))+" context of "+itoa(id))
						mu.Unlock()
					}
				}
			})
		}
		read := 0
		if events {
			for range n {
				<-w.Events()
				read++
			}
		} else {
			for range w.All() {
				read++
				if read == n {
					break
				}
			}
		}
		close(stop)
		wg.Wait()
		w.Stop()
		if len(bad) > 0 {
			t.Errorf("events=%v: %d mismatches, first: %v", events, len(bad), bad[:min(5, len(bad))])
		}
	}
}

func itoa(i int) string {
	return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(i))
}

func fmtInt(i int) string {
	if i == 0 {
		return "0"
	}
	neg := i < 0
	if neg {
		i = -i
	}
	var b []byte
	for i > 0 {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
	}
	if neg {
		b = append([]byte{'-'}, b...)
	}
	return string(b)
}

// TestHostile2PublishCancelledCtxConsistent: Publish with an already
// cancelled ctx that carries a span either returns nil and the value is
// stored, or returns an error and it is not: the stream holds exactly the
// values whose Publish returned nil.
func TestHostile2PublishCancelledCtxConsistent(t *testing.T) {
	tracer, _ := tracing(t)
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "h2cancel", natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{})
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	var accepted []int
	for i := 1; i <= 100; i++ {
		sctx, sp := tracer.Start(context.Background(), "publish")
		ctx, cancel := context.WithCancel(sctx)
		cancel()
		err := p.Publish(ctx, Order{ID: i})
		sp.End()
		switch {
		case err == nil:
			accepted = append(accepted, i)
		case !errors.Is(err, context.Canceled):
			t.Fatalf("Publish %d: %v", i, err)
		}
	}
	if err := p.Publish(testCtx(t), Order{ID: 1000}); err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	got := take(t, w, len(accepted)+1)
	if want := append(accepted, 1000); !slices.Equal(ids(got), want) {
		t.Fatalf("stored %v, want the accepted %v", ids(got), want)
	}
	t.Logf("%d of 100 Publish calls with a cancelled ctx were accepted", len(accepted))
}

// TestHostile2ErrClosedRemedy: after Topic.Shutdown, Watch, a new
// Publisher's Publish and the watcher's reads return ErrClosed, and the
// errors of the topic and publisher name the remedy.
func TestHostile2ErrClosedRemedy(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic, err := natsbridge.NewTopic(testCtx(t), js, "h2closed", natsbridge.JSON[Order](), natsbridge.TopicOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	w, err := topic.Watch(testCtx(t), natsbridge.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := topic.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	_, err = topic.Watch(testCtx(t), natsbridge.WatchOptions{})
	if !errors.Is(err, natsbridge.ErrClosed) || !strings.Contains(err.Error(), "NewTopic") {
		t.Errorf("Watch after Shutdown: %v", err)
	}
	_, err = topic.Publisher(natsbridge.PublisherOptions{})
	if !errors.Is(err, natsbridge.ErrClosed) || !strings.Contains(err.Error(), "NewTopic") {
		t.Errorf("Publisher after Shutdown: %v", err)
	}
	if _, err := w.Next(testCtx(t)); !errors.Is(err, natsbridge.ErrClosed) {
		t.Errorf("Next on a channel watcher after Shutdown: %v", err)
	}
	if _, ok := <-w.Events(); ok {
		t.Error("Events channel open after Shutdown")
	}
	if err := topic.Shutdown(testCtx(t)); err != nil && !errors.Is(err, natsbridge.ErrClosed) {
		t.Errorf("second Shutdown: %v", err)
	}
	w.Stop()
}

// TestHostile2DurableStopRacesShutdown: Stop and Topic.Shutdown race on a
// durable watcher that has read part of the stream; the next reader of
// the position starts right after the last value read.
func TestHostile2DurableStopRacesShutdown(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	const n = 100
	seed := newTopic(t, js, "h2dur", natsbridge.TopicOptions{})
	publishAll(t, seed, 1, n)
	last := 0
	for iter := range 6 {
		topic, err := natsbridge.NewTopic(testCtx(t), js, "h2dur", natsbridge.JSON[Order](), natsbridge.TopicOptions{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		w, err := topic.Watch(testCtx(t), natsbridge.WatchOptions{Durable: "pos", From: 1})
		if err != nil {
			t.Fatal(err)
		}
		got := take(t, w, 5)
		if got[0].ID != last+1 {
			t.Fatalf("iter %d: durable reader starts at %d, want %d (after %d)", iter, got[0].ID, last+1, last)
		}
		last = got[len(got)-1].ID
		var wg sync.WaitGroup
		wg.Go(w.Stop)
		wg.Go(func() {
			if err := topic.Shutdown(testCtx(t)); err != nil {
				t.Errorf("iter %d: Shutdown: %v", iter, err)
			}
		})
		wg.Wait()
		if r := w.Stats().Redelivered; r != 0 {
			t.Errorf("iter %d: Redelivered %d", iter, r)
		}
	}
}
