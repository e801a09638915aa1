package broadcast_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/broadcast"
)

// TestRegistrationSplitsConcurrentPublishers: a watcher registered while
// four publishers run receives exactly a suffix of what a watcher
// registered before them received: its marker cut the queue at one
// position, with nothing missing after it and nothing from before it.
// Values whose Publish returned before Watch was called are not in it;
// values whose Publish began after Watch returned are.
func TestRegistrationSplitsConcurrentPublishers(t *testing.T) {
	type msg struct{ pub, i int }
	const pubs, per = 4, 2000
	b := newB[msg](t, broadcast.Options{QueueLength: pubs * per, IncomingQueueLength: 8})
	ref := watchT(t, b)
	var done [pubs]atomic.Int64 // values of each publisher fully published
	var wg sync.WaitGroup
	for p := range pubs {
		wg.Go(func() {
			for i := range per {
				if err := b.Publish(context.Background(), msg{p, i}); err != nil {
					t.Error(err)
				}
				done[p].Store(int64(i + 1))
			}
		})
	}
	var before, after [pubs]int64
	for p := range pubs {
		before[p] = done[p].Load()
	}
	late := watchT(t, b)
	for p := range pubs {
		after[p] = done[p].Load() + 1 // Publish of this index began after Watch returned
	}
	wg.Wait()
	shutdown(t, b)

	all, got := slices.Collect(ref.All()), slices.Collect(late.All())
	if len(all) != pubs*per {
		t.Fatalf("reference watcher read %d values, want %d", len(all), pubs*per)
	}
	if !slices.Equal(all[len(all)-len(got):], got) {
		t.Fatalf("late watcher read %d values that are not the last %d the reference read", len(got), len(got))
	}
	for _, m := range got {
		if int64(m.i) < before[m.pub] {
			t.Errorf("late watcher read %v, published before Watch was called", m)
		}
	}
	for p := range pubs {
		var first int64 = per
		for _, m := range got {
			if m.pub == p {
				first = int64(m.i)
				break
			}
		}
		if first > after[p] {
			t.Errorf("publisher %d: late watcher's first value %d, want at most %d (published after Watch returned)", p, first, after[p])
		}
	}
}

// TestFlushWithConcurrentPublishers: when Flush returns, every value whose
// Publish returned before Flush was called is in every watcher's queue,
// while publishers keep going.
func TestFlushWithConcurrentPublishers(t *testing.T) {
	const pubs, per = 4, 3000
	b := newB[int](t, broadcast.Options{QueueLength: pubs * per, IncomingQueueLength: 8})
	ws := []*broadcast.Watcher[int]{watchT(t, b), watchT(t, b)}
	var published atomic.Int64
	var wg sync.WaitGroup
	for range pubs {
		wg.Go(func() {
			for i := range per {
				if err := b.Publish(context.Background(), i); err != nil {
					t.Error(err)
				}
				published.Add(1)
			}
		})
	}
	for range 50 {
		n := uint64(published.Load())
		if err := b.Flush(context.Background()); err != nil {
			t.Fatalf("Flush() = %v", err)
		}
		for i, w := range ws {
			if got := w.Delivered(); got < n {
				t.Fatalf("watcher %d: Delivered() = %d after Flush, want at least the %d published before it", i, got, n)
			}
		}
	}
	wg.Wait()
}

// TestFlushCountsDroppedValues: values a watcher's policy dropped count as
// handled; Flush does not wait for readers.
func TestFlushCountsDroppedValues(t *testing.T) {
	for _, p := range []broadcast.FullPolicy{broadcast.DropNewest, broadcast.DropOldest} {
		t.Run(p.String(), func(t *testing.T) {
			b := newB[int](t, broadcast.Options{Full: p, QueueLength: 1})
			w := watchT(t, b)
			publish(t, b, seq(0, 10)...)
			if err := b.Flush(context.Background()); err != nil {
				t.Fatalf("Flush() = %v", err)
			}
			if w.Delivered()+w.Dropped() < 10 {
				t.Errorf("Delivered %d + Dropped %d after Flush, want at least 10", w.Delivered(), w.Dropped())
			}
			if v, _ := w.Next(context.Background()); p == broadcast.DropOldest && v != 9 || p == broadcast.DropNewest && v != 0 {
				t.Errorf("Next() = %d after Flush with %v", v, p)
			}
		})
	}
}

// TestFlushWaitsForBlockWatcherAndStop: a full Block watcher holds Flush
// back; Flush returns ctx.Err() at its deadline, and returns nil once the
// watcher reads or is stopped.
func TestFlushWaitsForBlockWatcherAndStop(t *testing.T) {
	for _, end := range []string{"read", "stop"} {
		t.Run(end, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := broadcast.New[int](broadcast.Options{QueueLength: 1})
				w, _ := b.Watch()
				publish(t, b, 1, 2, 3)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if err := b.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Flush() = %v, want DeadlineExceeded", err)
				}
				res := make(chan error)
				go func() { res <- b.Flush(context.Background()) }()
				synctest.Wait()
				if end == "read" {
					for range 3 {
						w.Next(context.Background())
					}
				} else {
					w.Stop()
				}
				if err := <-res; err != nil {
					t.Errorf("Flush() = %v after the watcher %s, want nil", err, end)
				}
				w.Stop()
				shutdown(t, b)
			})
		})
	}
}

// TestFlushRacesShutdown: Flush calls racing Shutdown each return nil or
// ErrClosed, never hang, and after Shutdown every value is accounted for.
func TestFlushRacesShutdown(t *testing.T) {
	for range 50 {
		b := broadcast.New[int](broadcast.Options{QueueLength: 80}) // room for all: nobody reads until the end
		w, _ := b.Watch()
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for j := range 20 {
					if _, err := b.TryPublish(j); err != nil {
						return
					}
					if err := b.Flush(context.Background()); err != nil && !errors.Is(err, broadcast.ErrClosed) {
						t.Errorf("Flush() = %v, want nil or ErrClosed", err)
					}
				}
			})
		}
		wg.Go(func() { shutdown(t, b) })
		wg.Wait()
		s := b.Stats()
		if got := uint64(len(slices.Collect(w.All()))) + w.Dropped(); got != s.Published {
			t.Fatalf("read + dropped = %d, published %d", got, s.Published)
		}
		if err := b.Flush(context.Background()); !errors.Is(err, broadcast.ErrClosed) {
			t.Fatalf("Flush() after Shutdown = %v, want ErrClosed", err)
		}
	}
}

// TestFlushDoesNotWaitForLaterWatchers: a watcher registered after Flush
// was called, even a full Block one, does not hold it back.
func TestFlushDoesNotWaitForLaterWatchers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := broadcast.New[int](broadcast.Options{QueueLength: 1})
		publish(t, b, 1)
		res := make(chan error)
		go func() { res <- b.Flush(context.Background()) }()
		if err := <-res; err != nil {
			t.Errorf("Flush() = %v", err)
		}
		w, _ := b.Watch()
		publish(t, b, 2, 3)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := b.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Flush() = %v with w full, want DeadlineExceeded", err)
		}
		w.Stop()
		shutdown(t, b)
	})
}
