package broadcast_test

// Two edges found by attacking the read modes and the aborted Shutdown,
// each now documented: these tests hold the library to what the
// documentation says.

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/broadcast"
)

// TestHostile27ChannelPrefixRoom: a channel watcher of QueueLength 2 with
// a prefix of 3 holds 2 published values under DropNewest and DropOldest;
// under Block, as Events documents, the room the prefix leaves once read
// holds published values too: 2 + 3, and no more.
func TestHostile27ChannelPrefixRoom(t *testing.T) {
	for _, policy := range []broadcast.FullPolicy{broadcast.Block, broadcast.DropNewest, broadcast.DropOldest} {
		t.Run(policy.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := broadcast.New[int](broadcast.Options{})
				w, err := b.WatchWith(broadcast.WatchOptions{QueueLength: 2, Full: policy, Read: broadcast.ReadChannel}, -3, -2, -1)
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
				want := 2
				if policy == broadcast.Block {
					want = 2 + 3
				}
				if got := len(ch); got != want || (policy != broadcast.DropOldest && w.Delivered() != uint64(want)) {
					t.Errorf("%v watcher of QueueLength 2 with a prefix of 3 holds %d published values (Delivered %d, Dropped %d), want %d",
						policy, got, w.Delivered(), w.Dropped(), want)
				}
				w.Stop()
				shutdown(t, b)
			})
		})
	}
}

// TestHostile27AbortedShutdownAccountsForEveryWatcher: once a Shutdown's
// context ends, no Block watcher is waited for. The values a stuck watcher
// held back reach a watcher that reads all along as a burst, and what its
// full queue cannot take is lost, as the Shutdown documentation says:
// every loss counted in DroppedShutdown and that watcher's Dropped, what
// it reads in order, nothing else missing.
func TestHostile27AbortedShutdownAccountsForEveryWatcher(t *testing.T) {
	for range 20 {
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
			if !slices.IsSorted(read) || uint64(len(read))+reading.Dropped() != 8 {
				t.Errorf("the reading watcher read %v and counts %d dropped: want them in order, adding up to the 8 published", read, reading.Dropped())
			}
			if s := b.Stats(); s.DroppedShutdown != stuck.Dropped()+reading.Dropped() {
				t.Errorf("DroppedShutdown %d, want the watchers' %d + %d", s.DroppedShutdown, stuck.Dropped(), reading.Dropped())
			}
		})
	}
}
