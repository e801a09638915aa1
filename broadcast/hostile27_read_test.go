package broadcast_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/heraldgo/herald/broadcast"
)

// catchEvents calls w.Events and reports the channel, or what it panicked
// with.
func catchEvents[T any](w *broadcast.Watcher[T]) (ch <-chan T, r any) {
	defer func() { r = recover() }()
	return w.Events(), nil
}

// TestHostile27ReadModeRace: Events and a first Next (or a first All loop)
// on a fresh watcher, started at once from two goroutines. Whichever wins,
// the read mode is one of the two: Events either returns the channel the
// other read then reads too, or panics with the read-mode message; the
// watcher then reads every value once, in order, and the race detector
// sees no race.
func TestHostile27ReadModeRace(t *testing.T) {
	b := newB[int](t, broadcast.Options{QueueLength: 8})
	outcomes := map[string]int{}
	for i := range 300 {
		w := watchT(t, b)
		publish(t, b, 1, 2, 3)
		flush(t, b)
		first := make(chan int, 1)
		var ch <-chan int
		var r any
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			ch, r = catchEvents(w)
		})
		wg.Go(func() {
			<-start
			if i%2 == 0 {
				v, err := w.Next(context.Background())
				if err != nil {
					t.Errorf("Next() = %v", err)
				}
				first <- v
				return
			}
			for v := range w.All() {
				first <- v
				break
			}
		})
		close(start)
		wg.Wait()
		var got []int
		got = append(got, <-first)
		switch {
		case r == nil && ch != nil:
			outcomes["channel"]++
			publish(t, b, 4)
			flush(t, b)
			w.Stop()
			for v := range ch {
				got = append(got, v)
			}
		case r == eventsAfterPull:
			outcomes["queue"]++
			if ch2, r2 := catchEvents(w); ch2 != nil || r2 != eventsAfterPull {
				t.Fatalf("Events() again on a queue watcher = %v, %v; want the panic", ch2, r2)
			}
			publish(t, b, 4)
			flush(t, b)
			w.Stop()
			got = append(got, slices.Collect(w.All())...)
		default:
			t.Fatalf("Events() returned %v, panicked with %v", ch, r)
		}
		if !slices.Equal(got, []int{1, 2, 3, 4}) || w.Dropped() != 0 || w.Delivered() != 4 {
			t.Fatalf("run %d: read %v, Dropped %d, Delivered %d; want 1 2 3 4, 0, 4", i, got, w.Dropped(), w.Delivered())
		}
	}
	t.Logf("outcomes: %v", outcomes)
}

// TestHostile27ReadModeRaceWithParkedNext: a first Next parked on an
// empty watcher chose the queue mode: an Events call from another
// goroutine then panics, and the parked Next still gets the next value.
func TestHostile27ReadModeRaceWithParkedNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := broadcast.New[int](broadcast.Options{})
		w, _ := b.Watch()
		got := make(chan int, 1)
		go func() {
			v, err := w.Next(context.Background())
			if err != nil {
				t.Errorf("Next() = %v", err)
			}
			got <- v
		}()
		synctest.Wait() // Next is parked
		if _, r := catchEvents(w); r != eventsAfterPull {
			t.Errorf("Events() while a first Next is parked panicked with %v, want %q", r, eventsAfterPull)
		}
		publish(t, b, 7)
		if v := <-got; v != 7 {
			t.Errorf("parked Next() = %d, want 7", v)
		}
		w.Stop()
		shutdown(t, b)
	})
}

// TestHostile27ChannelWatcherConcurrentReaders: on a channel watcher,
// Events receives, Next and All loops from several goroutines at once take
// every value exactly once; each goroutine sees its values in queue order;
// and every reader ends once the watcher is closed. Run for each policy,
// with a prefix.
func TestHostile27ChannelWatcherConcurrentReaders(t *testing.T) {
	for _, policy := range []broadcast.FullPolicy{broadcast.Block, broadcast.DropNewest, broadcast.DropOldest} {
		t.Run(policy.String(), func(t *testing.T) {
			b := newB[int](t, broadcast.Options{})
			prefix := []int{-3, -2, -1}
			w, err := b.WatchWith(broadcast.WatchOptions{QueueLength: 4, Full: policy}, prefix...)
			if err != nil {
				t.Fatal(err)
			}
			ch := w.Events()
			const n = 3000
			results := make([][]int, 6)
			var wg sync.WaitGroup
			for r := range results {
				wg.Go(func() {
					var got []int
					defer func() { results[r] = got }()
					for i := 0; ; i++ {
						switch (r + i) % 3 {
						case 0:
							v, ok := <-ch
							if !ok {
								return
							}
							got = append(got, v)
						case 1:
							v, err := w.Next(context.Background())
							if errors.Is(err, broadcast.ErrClosed) {
								return
							}
							if err != nil {
								t.Errorf("Next() = %v", err)
								return
							}
							got = append(got, v)
						default:
							k, done := 0, true
							for v := range w.All() {
								got = append(got, v)
								if k++; k == 1+i%5 {
									done = false
									break
								}
							}
							if done {
								return
							}
						}
					}
				})
			}
			for i := range n {
				if err := b.Publish(context.Background(), i); err != nil {
					t.Fatal(err)
				}
			}
			flush(t, b)
			w.Stop()
			wg.Wait()
			seen := map[int]int{}
			read := 0
			for r, got := range results {
				if !slices.IsSorted(got) {
					t.Errorf("reader %d read out of queue order: %v", r, got)
				}
				for _, v := range got {
					seen[v]++
					if v >= 0 {
						read++
					}
				}
			}
			for v, c := range seen {
				if c != 1 {
					t.Errorf("value %d read %d times", v, c)
				}
			}
			for _, v := range prefix {
				if seen[v] != 1 {
					t.Errorf("prefix value %d read %d times", v, seen[v])
				}
			}
			if uint64(read)+w.Dropped() != n {
				t.Errorf("read %d + Dropped %d, published %d", read, w.Dropped(), n)
			}
			if policy != broadcast.DropOldest && w.Delivered() != uint64(read) {
				t.Errorf("Delivered %d, read %d", w.Delivered(), read)
			}
			if policy == broadcast.Block && w.Dropped() != 0 {
				t.Errorf("Block watcher Dropped %d", w.Dropped())
			}
		})
	}
}

// TestHostile27StopInsideAllLoop: Stop called in the body of an All loop,
// with the distributor waiting for room in this very Block watcher (and
// values still queued for it), returns; the loop then yields the values
// still queued, in order, and ends; Delivered counts exactly those read,
// nothing is dropped, and a second watcher still gets everything.
func TestHostile27StopInsideAllLoop(t *testing.T) {
	for _, channel := range []bool{false, true} {
		name := "queue"
		if channel {
			name = "channel"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := broadcast.New[int](broadcast.Options{QueueLength: 2})
				w, _ := b.Watch()
				other, _ := b.WatchWith(broadcast.WatchOptions{QueueLength: 64})
				if channel {
					w.Events()
				}
				publish(t, b, seq(0, 10)...)
				synctest.Wait() // w holds 0 1; the distributor waits with 2
				var got []int
				for v := range w.All() {
					got = append(got, v)
					if v == 1 {
						w.Stop()
						synctest.Wait()
					}
				}
				if len(got) < 2 || !slices.Equal(got, seq(0, len(got))) {
					t.Errorf("read %v, want 0, 1, ... in order, nothing skipped", got)
				}
				if w.Delivered() != uint64(len(got)) || w.Dropped() != 0 {
					t.Errorf("Delivered %d, Dropped %d; read %d", w.Delivered(), w.Dropped(), len(got))
				}
				if _, err := w.Next(context.Background()); !errors.Is(err, broadcast.ErrClosed) {
					t.Errorf("Next() after the loop = %v, want ErrClosed", err)
				}
				shutdown(t, b)
				if rest := slices.Collect(other.All()); !slices.Equal(rest, seq(0, 10)) {
					t.Errorf("other watcher read %v, want 0..9", rest)
				}
			})
		})
	}
}
