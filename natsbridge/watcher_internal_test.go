package natsbridge

import (
	"errors"
	"testing"
	"time"

	"github.com/heraldgo/herald/broadcast"
)

// TestStopCountsValuesNotQueued: a Block watcher stopped while its feed
// holds a value it read and cannot queue (the queue is full) counts it in
// Dropped: after Stop, what was read, dropped or counted as a gap is every
// value the feed took from the stream.
func TestStopCountsValuesNotQueued(t *testing.T) {
	ctx, topic := ordersTopic(t)
	p := publisher(t, topic, PublisherOptions{})
	for i := range 500 {
		if err := p.Publish(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := topic.Watch(ctx, WatchOptions{QueueLength: 4, Full: broadcast.Block, From: 1})
	if err != nil {
		t.Fatal(err)
	}
	// The feed fills the queue, takes one more value, and waits for room.
	for w.f.next.Load() < w.Start()+5 {
		if ctx.Err() != nil {
			t.Fatal("the feed did not fill the queues")
		}
		time.Sleep(time.Millisecond) // polling the feed's position
	}
	read := 0
	w.Stop()
	for {
		_, err := w.Next(ctx)
		if errors.Is(err, ErrClosed) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		read++
	}
	taken := w.f.next.Load() - w.Start()
	if got := uint64(read) + w.Stats().Dropped + w.Stats().Gaps; got != taken {
		t.Fatalf("read %d + dropped %d + gaps %d = %d, want the %d values the feed took", read, w.Stats().Dropped, w.Stats().Gaps, got, taken)
	}
	if w.Stats().Dropped == 0 {
		t.Fatal("Dropped() = 0: nothing was waiting outside the queue, the test proves nothing")
	}
}
