package broadcast_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/heraldgo/herald/broadcast"
)

// TestHostile27EventsRacesStopAndShutdown: a channel watcher nothing has
// read yet, with a prefix and a full Block queue the distributor waits
// on, gets Events, Stop and Shutdown at once from three goroutines. The
// channel Events returns is closed in the end and yields the prefix, then
// published values in order from the first, with none skipped; Delivered
// counts exactly the published values it yields; nothing is dropped.
func TestHostile27EventsRacesStopAndShutdown(t *testing.T) {
	for round := range 200 {
		b := broadcast.New[int](broadcast.Options{QueueLength: 1 + round%3})
		prefix := []int{-2, -1}
		w, err := b.WatchWith(broadcast.WatchOptions{Read: broadcast.ReadChannel}, prefix...)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			if ok, _ := b.TryPublish(i); !ok {
				break
			}
		}
		var ch <-chan int
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() { <-start; ch = w.Events() })
		wg.Go(func() { <-start; w.Stop() })
		wg.Go(func() {
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), failsafe)
			defer cancel()
			if err := b.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown() = %v", err)
			}
		})
		close(start)
		wg.Wait()
		var got []int
		for v := range ch {
			got = append(got, v)
		}
		if len(got) < 2 || !slices.Equal(got[:2], prefix) || !slices.Equal(got[2:], seq(0, len(got)-2)) {
			t.Fatalf("round %d: read %v, want the prefix then 0, 1, ...", round, got)
		}
		if w.Delivered() != uint64(len(got)-2) || w.Dropped() != 0 {
			t.Fatalf("round %d: read %v, Delivered %d, Dropped %d", round, got, w.Delivered(), w.Dropped())
		}
	}
}
