package broadcast_test

import (
	"context"
	"testing"

	"github.com/heraldgo/herald/broadcast"
)

// TestHostile27PublishAllocatesNothing: "Publish allocates nothing" and
// "TryPublish allocates nothing", once the queues have grown: measured
// over the whole process, so the distributor placing the values in a
// DropOldest queue watcher and a DropNewest channel watcher allocates
// nothing per value either.
func TestHostile27PublishAllocatesNothing(t *testing.T) {
	b := newB[int](t, broadcast.Options{QueueLength: 16, IncomingQueueLength: 1 << 12})
	w1, _ := b.WatchWith(broadcast.WatchOptions{Full: broadcast.DropOldest})
	w2, _ := b.WatchWith(broadcast.WatchOptions{Full: broadcast.DropNewest, Read: broadcast.ReadChannel})
	t.Cleanup(w1.Stop)
	t.Cleanup(w2.Stop)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 1 << 13 { // grow every queue to its limit
		if err := b.Publish(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, b)
	if a := testing.AllocsPerRun(2000, func() {
		if err := b.Publish(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("Publish allocates %v per call", a)
	}
	if a := testing.AllocsPerRun(2000, func() { b.TryPublish(1) }); a != 0 {
		t.Errorf("TryPublish allocates %v per call", a)
	}
}
