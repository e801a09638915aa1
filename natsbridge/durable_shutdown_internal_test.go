package natsbridge

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestDurableShutdownWhileRecordWriteHangs: a durable watcher's Shutdown
// does not wait for a write of its record that the server does not
// answer (the server gone: the write waits out its own bound, holding the
// keeper's lock), but stops the keeper, which ends the write. Shutdown
// waited for that write in Stop, past its ctx (by up to 2s a partition,
// with the server killed under load: TestGroupShutdownBoundedByCtx).
func TestDurableShutdownWhileRecordWriteHangs(t *testing.T) {
	ctx, topic := ordersTopic(t)
	w, err := topic.Watch(ctx, WatchOptions{Durable: "d"})
	if err != nil {
		t.Fatal(err)
	}
	// A write of the record in flight, unanswered: it holds the keeper's
	// lock until the keeper stops, or its own bound.
	k := w.d.keep
	k.mu.Lock()
	bound, cancelBound := context.WithTimeout(ctx, 10*time.Second)
	defer cancelBound()
	write := make(chan string, 1)
	go func() {
		defer k.mu.Unlock()
		select {
		case <-k.g.Stopping().Done():
			write <- "ended by the keeper's stop"
		case <-bound.Done():
			write <- "ended by its own bound"
		}
	}()
	if err := w.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	if how := <-write; how != "ended by the keeper's stop" {
		t.Errorf("the write in flight %s: Shutdown waited for it", how)
	}
}

// TestDurableShutdownCancelledHandsOverBeforeItReturns: a durable
// watcher's Shutdown whose ctx had ended, a value outstanding, hands the
// position over before it returns (with what the server answers within
// the grace), rather than leave it to the takeover timer.
func TestDurableShutdownCancelledHandsOverBeforeItReturns(t *testing.T) {
	ctx, topic := ordersTopic(t)
	w, _ := servedReader(ctx, t, topic, 10, 3)
	if n, _ := w.d.acks.outstanding(); n == 0 {
		t.Fatal("no value outstanding: the test would show nothing")
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.Shutdown(ended); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown(ended ctx) = %v, want context.Canceled", err)
	}
	select {
	case <-w.d.finished:
	default:
		t.Error("Shutdown(ended ctx) returned with the hand-over left to the takeover timer")
	}
}
