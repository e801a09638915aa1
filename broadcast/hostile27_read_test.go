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

// TestEventsRacesFirstReadOnQueueWatcher: Events and a first Next (or a
// first All loop) on a fresh queue watcher, started at once from two
// goroutines. Whichever comes first, Events returns a closed channel and
// panics not, and the watcher reads every value once, in order, with no
// race the detector sees.
func TestEventsRacesFirstReadOnQueueWatcher(t *testing.T) {
	b := newB[int](t, broadcast.Options{QueueLength: 8})
	for i := range 300 {
		w := watchT(t, b)
		publish(t, b, 1, 2, 3)
		flush(t, b)
		first := make(chan int, 1)
		var r any
		var closed bool
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			r, closed = eventsPanic(w)
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
		if r != nil || !closed {
			t.Fatalf("run %d: Events() on a queue watcher panicked with %v, closed %v; want a closed channel", i, r, closed)
		}
		got := []int{<-first}
		publish(t, b, 4)
		flush(t, b)
		w.Stop()
		got = append(got, slices.Collect(w.All())...)
		if !slices.Equal(got, []int{1, 2, 3, 4}) || w.Dropped() != 0 || w.Delivered() != 4 {
			t.Fatalf("run %d: read %v, Dropped %d, Delivered %d; want 1 2 3 4, 0, 4", i, got, w.Dropped(), w.Delivered())
		}
	}
}

// TestEventsWhileNextIsParked: Events on a queue watcher whose first Next
// is parked returns a closed channel, and the parked Next still gets the
// next value.
func TestEventsWhileNextIsParked(t *testing.T) {
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
		if r, closed := eventsPanic(w); r != nil || !closed {
			t.Errorf("Events() while a first Next is parked: panicked with %v, closed %v; want a closed channel", r, closed)
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
			w, err := b.WatchWith(broadcast.WatchOptions{QueueLength: 4, Full: policy, Read: broadcast.ReadChannel}, prefix...)
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
				w, _ := b.WatchWith(broadcast.WatchOptions{Read: readMode(channel)})
				other, _ := b.WatchWith(broadcast.WatchOptions{QueueLength: 64})
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
