package broadcast_test

import (
	"context"
	"fmt"

	"github.com/heraldgo/herald/broadcast"
)

type Order struct {
	ID    int
	Total int
}

// Typed fan-out: two consumers each receive every order, in order.
func Example() {
	ctx := context.Background()
	b := broadcast.New[Order](broadcast.Options{})

	billing, _ := b.Watch() // a queue watcher, read with All or Next
	shipping, _ := b.WatchWith(broadcast.WatchOptions{Read: broadcast.ReadChannel})

	for i := 1; i <= 3; i++ {
		_ = b.Publish(ctx, Order{ID: i, Total: 10 * i})
	}
	_ = b.Shutdown(ctx) // delivers what was queued, then closes the watchers

	for o := range billing.All() {
		fmt.Println("billing", o.ID, o.Total)
	}
	for o := range shipping.Events() { // a channel, for select statements
		fmt.Println("shipping", o.ID)
	}
	// Output:
	// billing 1 10
	// billing 2 20
	// billing 3 30
	// shipping 1
	// shipping 2
	// shipping 3
}

func ExampleNew() {
	b := broadcast.New[string](broadcast.Options{
		QueueLength:         10,                   // per watcher
		IncomingQueueLength: 100,                  // between publishers and the distributor
		Full:                broadcast.DropOldest, // a slow watcher keeps the freshest values
	})
	defer b.Shutdown(context.Background())
	fmt.Println(b.Stats().Watchers)
	// Output: 0
}

// A watcher sees exactly the values queued after it was registered.
func ExampleBroadcaster_Watch() {
	ctx := context.Background()
	b := broadcast.New[int](broadcast.Options{})
	_ = b.Publish(ctx, 1) // before the watcher: not seen
	w, _ := b.Watch()
	_ = b.Publish(ctx, 2)
	_ = b.Shutdown(ctx)
	for v := range w.All() {
		fmt.Println(v)
	}
	// Output: 2
}

// A prefix replays state the new watcher needs before live values.
func ExampleBroadcaster_WatchWith() {
	ctx := context.Background()
	b := broadcast.New[string](broadcast.Options{})
	w, _ := b.WatchWith(broadcast.WatchOptions{}, "snapshot-a", "snapshot-b")
	_ = b.Publish(ctx, "live-1")
	_ = b.Shutdown(ctx)
	for v := range w.All() {
		fmt.Println(v)
	}
	// Output:
	// snapshot-a
	// snapshot-b
	// live-1
}

// Each watcher chooses what happens when it falls behind. Here nobody reads
// until the end, so each queue of 2 fills up.
func ExampleFullPolicy() {
	ctx := context.Background()
	b := broadcast.New[int](broadcast.Options{QueueLength: 2})
	newest, _ := b.WatchWith(broadcast.WatchOptions{Full: broadcast.DropNewest})
	oldest, _ := b.WatchWith(broadcast.WatchOptions{Full: broadcast.DropOldest})
	audit, _ := b.WatchWith(broadcast.WatchOptions{QueueLength: 10, Full: broadcast.Block}) // loses nothing
	for i := 1; i <= 5; i++ {
		_ = b.Publish(ctx, i)
	}
	_ = b.Shutdown(ctx)
	for _, w := range []*broadcast.Watcher[int]{newest, oldest, audit} {
		var got []int
		for v := range w.All() {
			got = append(got, v)
		}
		fmt.Printf("got %v, dropped %d\n", got, w.Dropped())
	}
	s := b.Stats()
	fmt.Printf("published %d, dropped newest %d, dropped oldest %d\n", s.Published, s.DroppedNewest, s.DroppedOldest)
	// Output:
	// got [1 2], dropped 3
	// got [4 5], dropped 3
	// got [1 2 3 4 5], dropped 0
	// published 5, dropped newest 3, dropped oldest 3
}

// TryPublish never blocks: when the incoming queue is full it refuses, and
// the refusal is counted.
func ExampleBroadcaster_TryPublish() {
	b := broadcast.New[int](broadcast.Options{})
	sent, err := b.TryPublish(1)
	fmt.Println(sent, err)
	_ = b.Shutdown(context.Background())
	sent, err = b.TryPublish(2)
	fmt.Println(sent, err)
	// Output:
	// true <nil>
	// false broadcast: TryPublish after Shutdown began: the value is not queued; publish to a new Broadcaster: broadcast: closed
}

// Next reads one value at a time, with a context.
func ExampleWatcher_Next() {
	ctx := context.Background()
	b := broadcast.New[string](broadcast.Options{})
	w, _ := b.Watch()
	_ = b.Publish(ctx, "hello")
	v, err := w.Next(ctx)
	fmt.Println(v, err)
	w.Stop()
	_, err = w.Next(ctx)
	fmt.Println(err)
	_ = b.Shutdown(ctx)
	// Output:
	// hello <nil>
	// broadcast: Watcher.Next: the watcher is stopped (Stop or Shutdown) and was read to the end; watch again to read on: broadcast: closed
}

// NextBatch takes what is queued, up to n values at once: here a reader
// with room for 2.
func ExampleWatcher_NextBatch() {
	ctx := context.Background()
	b := broadcast.New[int](broadcast.Options{})
	defer b.Shutdown(ctx)
	w, _ := b.Watch()
	defer w.Stop()
	for i := range 5 {
		_ = b.Publish(ctx, i)
	}
	_ = b.Flush(ctx) // all 5 in w's queue
	var batch []int
	for range 3 {
		batch, _ = w.NextBatch(ctx, batch[:0], 2)
		fmt.Println(batch)
	}
	// Output:
	// [0 1]
	// [2 3]
	// [4]
}

// Flush waits until what was published so far is in every watcher's queue:
// here, a DropNewest watcher nobody reads yet, whose drops are then known.
func ExampleBroadcaster_Flush() {
	ctx := context.Background()
	b := broadcast.New[int](broadcast.Options{QueueLength: 2, Full: broadcast.DropNewest})
	defer b.Shutdown(ctx)
	w, _ := b.Watch()
	defer w.Stop()
	for i := range 5 {
		_ = b.Publish(ctx, i)
	}
	if err := b.Flush(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("queued", w.Delivered(), "dropped", w.Dropped())
	v, _ := w.Next(ctx)
	fmt.Println("first", v)
	// Output:
	// queued 2 dropped 3
	// first 0
}
