package broadcast_test

// The tests in this file fail: each shows a documented promise broken.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/broadcast"
)

// TestHostile27BlockChannelPrefixEnlargesTheQueue: QueueLength "is the
// capacity of this watcher's queue", the prefix "does not take room in the
// watcher's queue", and Block "waits until the watcher makes room". A
// Block channel watcher (Events read first) of QueueLength 2 with a prefix
// of 3 keeps the prefix's room in its channel once the prefix is read: the
// distributor then places 5 published values in a queue of 2 instead of
// waiting. (DropNewest and DropOldest channel watchers hold 2.)
func TestHostile27BlockChannelPrefixEnlargesTheQueue(t *testing.T) {
	for _, policy := range []broadcast.FullPolicy{broadcast.Block, broadcast.DropNewest, broadcast.DropOldest} {
		t.Run(policy.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := broadcast.New[int](broadcast.Options{})
				w, err := b.WatchWith(broadcast.WatchOptions{QueueLength: 2, Full: policy}, -3, -2, -1)
				if err != nil {
					t.Fatal(err)
				}
				ch := w.Events()
				for range 3 {
					<-ch // the prefix
				}
				publish(t, b, seq(0, 10)...)
				synctest.Wait() // placed what fits; a Block watcher waits for room
				// Delivered also counts what DropOldest discarded.
				if got := len(ch); got != 2 || (policy != broadcast.DropOldest && w.Delivered() != 2) {
					t.Errorf("%v watcher of QueueLength 2 holds %d published values (Delivered %d, Dropped %d), want 2: its queue length",
						policy, got, w.Delivered(), w.Dropped())
				}
				w.Stop()
				shutdown(t, b)
			})
		})
	}
}

// TestHostile27AbortedShutdownDropsFromReadingBlockWatcher: "A full
// watcher never makes another one lose a value", and when a Shutdown's
// context ends "because a Block watcher does not make room, full Block
// watchers are no longer waited for ... and every other watcher still gets
// every value queued"; DroppedShutdown "counts values a full Block watcher
// never made room for before the context given to Shutdown ended".
//
// A Block watcher that is read all along, registered after one that is
// never read, loses values to the aborted Shutdown: the values the stuck
// watcher held back reach it as a burst after the context ended, the
// distributor finds its queue full for an instant, no longer waits for
// room its reader is about to make, and counts them in DroppedShutdown.
// The stuck watcher made the reading one lose values it was never offered
// before the context ended.
func TestHostile27AbortedShutdownDropsFromReadingBlockWatcher(t *testing.T) {
	const runs = 50
	lost := 0
	var example string
	for range runs {
		synctest.Test(t, func(t *testing.T) {
			b := broadcast.New[int](broadcast.Options{QueueLength: 2, IncomingQueueLength: 8})
			stuck, _ := b.Watch() // Block, never read
			reading, _ := b.Watch()
			got := make(chan []int, 1)
			go func() { got <- slices.Collect(reading.All()) }()
			publish(t, b, seq(0, 8)...)
			synctest.Wait() // the stuck watcher holds 0 1; 2..7 wait for it
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := b.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Shutdown() = %v, want DeadlineExceeded", err)
			}
			read := <-got
			if stuck.Dropped() != 6 {
				t.Errorf("stuck watcher Dropped %d, want 6", stuck.Dropped())
			}
			if !slices.Equal(read, seq(0, 8)) {
				lost++
				if example == "" {
					example = fmt.Sprintf("read %v, Dropped %d, Stats %+v", read, reading.Dropped(), b.Stats())
				}
			}
		})
	}
	if lost > 0 {
		t.Errorf("in %d of %d runs the reading Block watcher lost values to a Shutdown aborted for another watcher; e.g. %s", lost, runs, example)
	}
}
