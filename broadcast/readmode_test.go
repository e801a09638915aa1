package broadcast_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/heraldgo/herald/broadcast"
)

// The tests in this file hold the read-mode rule: a watcher's first read
// chooses how it is read. Events first makes a channel watcher, which Next
// and All read through its channel; Next or All first makes a queue
// watcher, on which Events panics.

const eventsAfterPull = "broadcast: Watcher.Events after Next or All: a watcher's read mode is chosen by its first read"

// eventsPanic calls w.Events and returns what it panicked with, or nil.
func eventsPanic[T any](w *broadcast.Watcher[T]) (r any) {
	defer func() { r = recover() }()
	w.Events()
	return nil
}

func TestEventsAfterPullPanics(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		pull func(t *testing.T, w *broadcast.Watcher[int]) // reads one value
	}{
		{"Next", func(t *testing.T, w *broadcast.Watcher[int]) { w.Next(context.Background()) }},
		{"Next with an ended context", func(t *testing.T, w *broadcast.Watcher[int]) { w.Next(ended) }},
		{"All, ended by break", func(t *testing.T, w *broadcast.Watcher[int]) {
			for range w.All() {
				break
			}
		}},
		{"All, inside the loop", func(t *testing.T, w *broadcast.Watcher[int]) {
			for range w.All() {
				if r := eventsPanic(w); r != eventsAfterPull {
					t.Errorf("Events() inside an All loop panicked with %v, want %q", r, eventsAfterPull)
				}
				break
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newB[int](t, broadcast.Options{})
			w := watchT(t, b)
			publish(t, b, 1, 2, 3)
			flush(t, b)
			tc.pull(t, w)
			if r := eventsPanic(w); r != eventsAfterPull {
				t.Fatalf("Events() after a pulling read panicked with %v, want %q", r, eventsAfterPull)
			}
			// The panic leaves the watcher as it was: the pulling reads
			// still get the rest, in order, with nothing lost.
			w.Stop()
			var got []int
			for {
				v, err := w.Next(context.Background())
				if err != nil {
					break
				}
				got = append(got, v)
			}
			if !slices.Equal(got, []int{2, 3}) || w.Dropped() != 0 {
				t.Errorf("after the panic Next read %v, Dropped() = %d; want [2 3], 0", got, w.Dropped())
			}
		})
	}
}

// TestPullReadsOnChannelWatcherMix: on a channel watcher, Next, All loops
// that break and receives from Events share the channel: every value is
// read once, in order, and Next and All end once the channel is closed.
func TestPullReadsOnChannelWatcherMix(t *testing.T) {
	b := newB[int](t, broadcast.Options{QueueLength: 20})
	w := watchT(t, b)
	ch := w.Events()
	publish(t, b, seq(0, 12)...)
	flush(t, b)
	var got []int
	for round := range 4 {
		v, err := w.Next(context.Background())
		if err != nil {
			t.Fatalf("Next() = %v", err)
		}
		got = append(got, v)
		for v := range w.All() {
			got = append(got, v)
			break // a channel watcher's loop holds nothing back
		}
		if round%2 == 0 {
			got = append(got, <-ch)
		}
	}
	if got2 := w.Events(); got2 != ch {
		t.Errorf("Events() on a channel watcher returned another channel")
	}
	w.Stop()
	got = append(got, slices.Collect(w.All())...)
	if !slices.Equal(got, seq(0, 12)) {
		t.Errorf("mixed reads got %v, want 0..11 once each, in order", got)
	}
	if _, err := w.Next(context.Background()); !errors.Is(err, broadcast.ErrClosed) {
		t.Errorf("Next() on a closed, drained channel watcher = %v, want ErrClosed", err)
	}
	if w.Delivered() != 12 || w.Dropped() != 0 {
		t.Errorf("Delivered() = %d, Dropped() = %d; want 12, 0", w.Delivered(), w.Dropped())
	}
}

// TestChannelWatcherGetsPrefix: a WatchWithPrefix watcher whose first read
// is Events gets its prefix on the channel, then the values queued before
// Events was called, then later ones; the channel holds the queue length
// plus the prefix.
func TestChannelWatcherGetsPrefix(t *testing.T) {
	for _, policy := range []broadcast.FullPolicy{broadcast.Block, broadcast.DropNewest, broadcast.DropOldest} {
		t.Run(policy.String(), func(t *testing.T) {
			b := newB[int](t, broadcast.Options{})
			prefix := []int{-3, -2, -1}
			w, err := b.WatchWith(broadcast.WatchOptions{QueueLength: 4, Full: policy}, prefix...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Stop)
			publish(t, b, 0, 1)
			flush(t, b) // 0 and 1 wait in the ring: nothing has read w yet
			ch := w.Events()
			if cap(ch) != 4+len(prefix) {
				t.Errorf("cap(Events()) = %d, want queue length 4 + prefix %d", cap(ch), len(prefix))
			}
			publish(t, b, 2, 3)
			flush(t, b)
			w.Stop()
			var got []int
			for v := range ch {
				got = append(got, v)
			}
			if want := append(slices.Clone(prefix), 0, 1, 2, 3); !slices.Equal(got, want) {
				t.Errorf("channel watcher read %v, want %v", got, want)
			}
			if w.Delivered() != 4 || w.Dropped() != 0 {
				t.Errorf("Delivered() = %d, Dropped() = %d; want 4, 0", w.Delivered(), w.Dropped())
			}
		})
	}
}

// TestEventsFreesDistributorWaitingForRoom: Events on an unread Block
// watcher whose ring is full, with the distributor waiting for room in it,
// moves the ring to the channel; the distributor then sends on the channel
// as the reader makes room.
func TestEventsFreesDistributorWaitingForRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := broadcast.New[int](broadcast.Options{QueueLength: 1})
		w := watchT(t, b)
		publish(t, b, 1, 2, 3)
		synctest.Wait() // 1 in the ring; the distributor waits with 2
		ch := w.Events()
		var got []int
		for range 3 {
			got = append(got, <-ch)
		}
		if !slices.Equal(got, []int{1, 2, 3}) {
			t.Errorf("read %v, want 1 2 3", got)
		}
		w.Stop()
		shutdown(t, b)
	})
}
