package broadcast_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/broadcast"
)

// The tests in this file hold the promises that broke under concurrent use:
// each failed before the mechanism it names was fixed.

// checkAccounting checks the Stats invariant over the given watchers, all
// of the broadcaster's: their Dropped add up to the Stats drop fields.
func checkAccounting[T any](t *testing.T, b *broadcast.Broadcaster[T], ws ...*broadcast.Watcher[T]) {
	t.Helper()
	s := b.Stats()
	var dropped uint64
	for _, w := range ws {
		dropped += w.Dropped()
	}
	if sum := s.DroppedNewest + s.DroppedOldest + s.DroppedShutdown; sum != dropped {
		t.Errorf("Stats drops %d (%+v), watchers' Dropped sum %d: want equal", sum, s, dropped)
	}
}

// TestReadersParkedAtStopAllReturn: several readers parked on one watcher
// all return when it is stopped, in each read mode.
func TestReadersParkedAtStopAllReturn(t *testing.T) {
	for _, mode := range readModes {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := broadcast.New[int](broadcast.Options{})
				w, _ := b.WatchWith(broadcast.WatchOptions{Read: mode.mode})
				var wg sync.WaitGroup
				for range 3 {
					wg.Go(func() { mode.read(t, w) })
				}
				synctest.Wait()
				w.Stop()
				wg.Wait()
				shutdown(t, b)
			})
		})
	}
}

// TestPrefixSurvivesDropOldest: a list-then-watch snapshot given to
// WatchWith is read in full by a DropOldest watcher however fast
// values follow it, in every read mode.
func TestPrefixSurvivesDropOldest(t *testing.T) {
	prefix := []int{-3, -2, -1}
	for _, mode := range readModes {
		t.Run(mode.name, func(t *testing.T) {
			b := newB[int](t, broadcast.Options{QueueLength: 8, Full: broadcast.DropOldest})
			w, err := b.WatchWith(broadcast.WatchOptions{Read: mode.mode}, prefix...)
			if err != nil {
				t.Fatal(err)
			}
			publish(t, b, seq(0, 100)...)
			shutdown(t, b)
			got := mode.read(t, w)
			if len(got) < 3 || !slices.Equal(got[:3], prefix) {
				t.Fatalf("read %v, want it to start with the prefix %v", got, prefix)
			}
			if n := uint64(len(got)-3) + w.Dropped(); n != 100 {
				t.Errorf("read %d published + dropped %d = %d, want 100", len(got)-3, w.Dropped(), n)
			}
			if mode.name != "Events" && !slices.Equal(got[3:], seq(92, 100)) {
				t.Errorf("read %v after the prefix, want the newest 8: 92..99", got[3:])
			}
			checkAccounting(t, b, w)
		})
	}
}

// TestPrefixDoesNotTakeQueueRoom: the prefix is owed on top of the queue
// length, so a Block watcher with a prefix still takes QueueLength values
// before it holds the distributor back.
func TestPrefixDoesNotTakeQueueRoom(t *testing.T) {
	b := newB[int](t, broadcast.Options{QueueLength: 2})
	w, _ := b.WatchWith(broadcast.WatchOptions{}, -2, -1)
	t.Cleanup(w.Stop)
	publish(t, b, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	if err := b.Flush(ctx); err != nil {
		t.Fatalf("Flush() = %v with 2 values for a queue of 2 behind a prefix of 2", err)
	}
	if got := w.Delivered(); got != 2 {
		t.Errorf("Delivered() = %d, want 2", got)
	}
}

// TestShutdownDeadlineSparesHealthyWatchers: when Shutdown's context ends
// with a full Block watcher nobody reads, only that watcher loses values;
// a DropNewest watcher with room and a reader gets every one.
func TestShutdownDeadlineSparesHealthyWatchers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := broadcast.New[int](broadcast.Options{QueueLength: 1000})
		stuck, _ := b.WatchWith(broadcast.WatchOptions{QueueLength: 1, Full: broadcast.Block})
		healthy, _ := b.WatchWith(broadcast.WatchOptions{Full: broadcast.DropNewest})
		roomy, _ := b.WatchWith(broadcast.WatchOptions{Full: broadcast.Block, Read: broadcast.ReadChannel})
		var got, gotRoomy []int
		var wg sync.WaitGroup
		wg.Go(func() { got = slices.Collect(healthy.All()) })
		wg.Go(func() {
			for v := range roomy.Events() {
				gotRoomy = append(gotRoomy, v)
			}
		})
		publish(t, b, 1, 2, 3)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := b.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown() = %v, want DeadlineExceeded", err)
		}
		wg.Wait()
		if !slices.Equal(got, []int{1, 2, 3}) || !slices.Equal(gotRoomy, []int{1, 2, 3}) {
			t.Errorf("healthy watchers read %v and %v, want 1 2 3 each", got, gotRoomy)
		}
		if stuck.Dropped() != 2 || healthy.Dropped() != 0 || roomy.Dropped() != 0 {
			t.Errorf("Dropped() = %d, %d, %d; want 2 for the stuck watcher only", stuck.Dropped(), healthy.Dropped(), roomy.Dropped())
		}
		if s := b.Stats(); s.DroppedShutdown != 2 {
			t.Errorf("Stats().DroppedShutdown = %d, want 2", s.DroppedShutdown)
		}
		checkAccounting(t, b, stuck, healthy, roomy)
	})
}

// TestPanicInAllLoopKeepsTheRest: a panic in the body of an All loop,
// recovered by the caller, leaves the values the loop took but did not
// yield readable, in order, and counts nothing as lost.
func TestPanicInAllLoopKeepsTheRest(t *testing.T) {
	b := newB[int](t, broadcast.Options{})
	w := watchT(t, b)
	publish(t, b, seq(0, 10)...)
	shutdown(t, b) // all ten are in w's queue
	var first []int
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want boom", r)
			}
		}()
		for v := range w.All() {
			first = append(first, v)
			if v == 3 {
				panic("boom")
			}
		}
	}()
	rest := slices.Collect(w.All())
	if got := append(first, rest...); !slices.Equal(got, seq(0, 10)) {
		t.Errorf("read %v, then %v after the panic; want 0..9 once each", first, rest)
	}
	if w.Dropped() != 0 {
		t.Errorf("Dropped() = %d, want 0", w.Dropped())
	}
}

// TestQueueLengthLimits: a length above MaxQueueLength is refused with a
// message naming it, before anything is allocated, in New and WatchWith.
func TestQueueLengthLimits(t *testing.T) {
	b := newB[int](t, broadcast.Options{})
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"Options.QueueLength", func() { broadcast.New[int](broadcast.Options{QueueLength: 1 << 60}) }},
		{"Options.IncomingQueueLength", func() { broadcast.New[int](broadcast.Options{IncomingQueueLength: 1 << 60}) }},
		{"WatchOptions.QueueLength", func() { b.WatchWith(broadcast.WatchOptions{QueueLength: 1 << 60}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := func() (msg string) {
				defer func() { msg = fmt.Sprint(recover()) }()
				tc.f()
				return ""
			}()
			want := fmt.Sprintf("broadcast: %s %d is above MaxQueueLength (%d)", tc.name, 1<<60, broadcast.MaxQueueLength)
			if msg != want {
				t.Errorf("panic %q, want %q", msg, want)
			}
		})
	}
	// The largest length is accepted, and costs nothing until it fills.
	w, err := b.WatchWith(broadcast.WatchOptions{QueueLength: broadcast.MaxQueueLength})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
}

// TestWatchOptionsZeroTakesBroadcasterPolicy: WatchWith's zero Full means
// the broadcaster's policy; a named policy is used as given.
func TestWatchOptionsZeroTakesBroadcasterPolicy(t *testing.T) {
	b := newB[int](t, broadcast.Options{Full: broadcast.DropNewest})
	inherits, _ := b.WatchWith(broadcast.WatchOptions{QueueLength: 1})
	t.Cleanup(inherits.Stop)
	publish(t, b, 1, 2, 3)
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	if err := b.Flush(ctx); err != nil {
		t.Fatalf("Flush() = %v: the zero-policy watcher blocked, want DropNewest", err)
	}
	if inherits.Dropped() != 2 {
		t.Errorf("Dropped() = %d, want 2 (DropNewest, the broadcaster's policy)", inherits.Dropped())
	}

	synctest.Test(t, func(t *testing.T) {
		b := broadcast.New[int](broadcast.Options{Full: broadcast.DropNewest})
		audit, _ := b.WatchWith(broadcast.WatchOptions{QueueLength: 1, Full: broadcast.Block})
		publish(t, b, 1, 2)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := b.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Flush() = %v with a full Block watcher, want DeadlineExceeded", err)
		}
		if v, _ := audit.Next(ctx); v != 1 {
			t.Errorf("Next() = %d, want 1", v)
		}
		audit.Stop()
		shutdown(t, b)
		if audit.Dropped() != 0 {
			t.Errorf("Block watcher Dropped() = %d, want 0", audit.Dropped())
		}
	})
}

func TestFullPolicyZeroIsDefault(t *testing.T) {
	if got := broadcast.FullPolicy(0).String(); got != "default" {
		t.Errorf("FullPolicy(0).String() = %q, want default", got)
	}
	defer func() {
		if r := fmt.Sprint(recover()); !strings.Contains(r, "invalid Options.Full FullPolicy(4)") {
			t.Errorf("panic %q, want it to name the invalid policy", r)
		}
	}()
	broadcast.New[int](broadcast.Options{Full: 4})
}

// TestHandedBackValuesTakeQueueRoom: the values an All loop took and handed
// back when it ended early count against the queue length again, for
// every policy: a watcher of QueueLength 3 that read one of three values
// holds three, not more, however many follow. Block then waits (here until
// Shutdown gives up), DropNewest skips new values, and DropOldest discards
// the handed back ones first, as the oldest, but never a prefix value. If
// the queue filled while the loop held them, the watcher holds more than
// its length until a new value comes.
func TestHandedBackValuesTakeQueueRoom(t *testing.T) {
	tests := []struct {
		policy        broadcast.FullPolicy
		prefix        []int
		during, after []int // published while the loop holds 1 and 2, and after
		want          []int // what the watcher holds at the end
		dropped       uint64
	}{
		{broadcast.Block, nil, nil, seq(3, 10), []int{1, 2, 3}, 6},
		{broadcast.DropNewest, nil, nil, seq(3, 10), []int{1, 2, 3}, 6},
		{broadcast.DropOldest, nil, nil, seq(3, 10), []int{7, 8, 9}, 6},
		{broadcast.DropOldest, []int{-2, -1}, nil, seq(3, 10), []int{-1, 7, 8, 9}, 7},
		{broadcast.Block, nil, []int{3, 4, 5}, []int{6}, []int{1, 2, 3, 4, 5}, 1},
		{broadcast.DropNewest, nil, []int{3, 4, 5}, []int{6}, []int{1, 2, 3, 4, 5}, 1},
		{broadcast.DropOldest, nil, []int{3, 4, 5}, []int{6}, []int{4, 5, 6}, 3},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%v/prefix=%d/during=%d", tc.policy, len(tc.prefix), len(tc.during)), func(t *testing.T) {
			b := broadcast.New[int](broadcast.Options{})
			w, err := b.WatchWith(broadcast.WatchOptions{QueueLength: 3, Full: tc.policy}, tc.prefix...)
			if err != nil {
				t.Fatal(err)
			}
			publish(t, b, 0, 1, 2)
			flush(t, b)
			for range w.All() { // takes everything queued
				publish(t, b, tc.during...)
				flush(t, b) // into the queue the loop emptied
				break       // after the first value: the rest goes back
			}
			publish(t, b, tc.after...)
			if tc.policy == broadcast.Block {
				// The distributor waits for room: a Shutdown that gives
				// up at once counts the rest as abandoned.
				ended, cancel := context.WithCancel(context.Background())
				cancel()
				if err := b.Shutdown(ended); !errors.Is(err, context.Canceled) {
					t.Errorf("Shutdown(ended context) = %v, want context.Canceled", err)
				}
			} else {
				shutdown(t, b)
			}
			if got := slices.Collect(w.All()); !slices.Equal(got, tc.want) {
				t.Errorf("watcher holds %v, want %v", got, tc.want)
			}
			if got := w.Dropped(); got != tc.dropped {
				t.Errorf("Dropped() = %d, want %d", got, tc.dropped)
			}
			checkAccounting(t, b, w)
		})
	}
}
