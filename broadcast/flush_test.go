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

// TestFlushFromReaderEndsWithItsContext: as its doc says, Flush called
// from the only reader of a full Block watcher waits for room that reader
// cannot make: it returns when its context ends, and nothing is lost.
func TestFlushFromReaderEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newB[int](t, broadcast.Options{QueueLength: 1}) // Block
		w, _ := b.Watch()
		publish(t, b, 1, 2, 3)
		returned := make(chan error, 1)
		var got []int
		go func() {
			for v := range w.All() {
				got = append(got, v)
				if v == 1 {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					returned <- b.Flush(ctx)
					cancel()
				}
				if v == 3 {
					w.Stop()
				}
			}
			close(returned)
		}()
		if err := <-returned; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Flush() = %v, want DeadlineExceeded", err)
		}
		<-returned
		if want := []int{1, 2, 3}; !slices.Equal(got, want) || w.Dropped() != 0 {
			t.Errorf("read %v, Dropped() = %d; want %v, 0", got, w.Dropped(), want)
		}
	})
}

// TestFlushCountsWhatWasPublishedBefore: publishers and Flush
// callers run at once on a broadcaster with queue and channel watchers of
// every policy, some with a prefix, each read by its own goroutine. After
// each Flush returns nil, every value whose Publish returned before the
// Flush call is counted by every watcher: in Delivered, or, for
// DropNewest, in Delivered or Dropped; and the watchers' Delivered sums to
// Stats.Delivered once the broadcaster is shut down.
func TestFlushCountsWhatWasPublishedBefore(t *testing.T) {
	b := broadcast.New[int](broadcast.Options{QueueLength: 3, IncomingQueueLength: 2})
	type watched struct {
		w      *broadcast.Watcher[int]
		policy broadcast.FullPolicy
		prefix int
		read   atomic.Int64
	}
	var ws []*watched
	var readers sync.WaitGroup
	for i, policy := range []broadcast.FullPolicy{broadcast.Block, broadcast.DropNewest, broadcast.DropOldest} {
		for mode := range 2 {
			a := &watched{policy: policy, prefix: (i + mode) % 3}
			w, err := b.WatchWith(broadcast.WatchOptions{Full: policy, Read: broadcast.ReadMode(mode)}, seq(-a.prefix, 0)...)
			if err != nil {
				t.Fatal(err)
			}
			a.w = w
			if mode == 1 {
				ch := w.Events()
				readers.Go(func() {
					for range ch {
						a.read.Add(1)
					}
				})
			} else {
				readers.Go(func() {
					for range w.All() {
						a.read.Add(1)
					}
				})
			}
			ws = append(ws, a)
		}
	}
	var returned atomic.Uint64 // Publish calls that have returned nil
	var pubs, flushers sync.WaitGroup
	// The publishers begin with the first Flush, and every flusher calls
	// Flush at least once: on a loaded machine the publishers could
	// otherwise be done before a flusher ran at all.
	flushing := make(chan struct{})
	var first sync.Once
	for p := range 3 {
		pubs.Go(func() {
			<-flushing
			for i := range 400 {
				if err := b.Publish(context.Background(), 1000*p+i); err != nil {
					t.Errorf("Publish: %v", err)
					return
				}
				returned.Add(1)
			}
		})
	}
	var flushes atomic.Int64
	stop := make(chan struct{})
	for range 2 {
		flushers.Go(func() {
			for {
				first.Do(func() { close(flushing) })
				before := returned.Load()
				if err := b.Flush(context.Background()); err != nil {
					t.Errorf("Flush() = %v", err)
					return
				}
				flushes.Add(1)
				for _, a := range ws {
					counted := a.w.Delivered()
					if a.policy == broadcast.DropNewest {
						counted += a.w.Dropped()
					}
					if counted < before {
						t.Errorf("after Flush, %v watcher counts %d values (Delivered %d, Dropped %d); %d were published before the Flush",
							a.policy, counted, a.w.Delivered(), a.w.Dropped(), before)
						return
					}
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		})
	}
	pubs.Wait()
	close(stop)
	flushers.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown() = %v", err)
	}
	readers.Wait()
	s := b.Stats()
	var delivered, dropped uint64
	for _, a := range ws {
		delivered += a.w.Delivered()
		dropped += a.w.Dropped()
		read := uint64(a.read.Load()) - uint64(a.prefix)
		if a.policy != broadcast.DropOldest && read != a.w.Delivered() {
			t.Errorf("%v watcher read %d, Delivered %d", a.policy, read, a.w.Delivered())
		}
		if read+a.w.Dropped() != s.Published {
			t.Errorf("%v watcher read %d + Dropped %d, Published %d", a.policy, read, a.w.Dropped(), s.Published)
		}
	}
	if delivered != s.Delivered || dropped != s.DroppedNewest+s.DroppedOldest || s.DroppedShutdown != 0 {
		t.Errorf("watchers: Delivered %d, Dropped %d; Stats %+v", delivered, dropped, s)
	}
	t.Logf("%d Flush calls, %+v", flushes.Load(), s)
	if flushes.Load() == 0 {
		t.Error("no Flush ran")
	}
}

// TestFlushEdges: Flush with nothing queued returns at once;
// Flush calls made with no value queued between them (sharing one marker)
// all return; a Flush whose context has ended returns its error; Flush
// after Shutdown completed returns ErrClosed.
func TestFlushEdges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := broadcast.New[int](broadcast.Options{QueueLength: 1})
		if err := b.Flush(context.Background()); err != nil {
			t.Errorf("Flush() on an idle broadcaster = %v", err)
		}
		w, _ := b.Watch() // Block, read later
		publish(t, b, 1, 2)
		synctest.Wait() // the distributor waits with 2
		errs := make(chan error, 5)
		for range 5 {
			go func() { errs <- b.Flush(context.Background()) }()
		}
		ended, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := b.Flush(ended); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Flush() behind a full Block watcher = %v, want DeadlineExceeded", err)
		}
		synctest.Wait()
		select {
		case err := <-errs:
			t.Fatalf("a Flush() returned %v before the value ahead of it was placed", err)
		default:
		}
		if v, err := w.Next(context.Background()); v != 1 || err != nil {
			t.Fatalf("Next() = %d, %v", v, err)
		}
		for range 5 {
			if err := <-errs; err != nil {
				t.Errorf("shared Flush() = %v", err)
			}
		}
		if w.Delivered() != 2 {
			t.Errorf("after Flush, Delivered %d, want 2", w.Delivered())
		}
		w.Stop()
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := b.Flush(context.Background()); !errors.Is(err, broadcast.ErrClosed) {
			t.Errorf("Flush() after Shutdown = %v, want ErrClosed", err)
		}
		canceled, cancel2 := context.WithCancel(context.Background())
		cancel2()
		if err := b.Flush(canceled); err == nil {
			t.Errorf("Flush(ended) after Shutdown = nil")
		}
	})
}

// TestFlushNotNilWhenShutdownAbandonsValues: Flush "returns once every value
// queued before the call has been placed in, or by its policy dropped
// from, the queue of every watcher registered before the call", and
// Delivered "After Broadcaster.Flush returns, ... counts every value queued
// before the call that this watcher's policy did not skip". A Flush that
// is waiting when a Shutdown's context ends returns nil although a value
// queued before it was neither placed nor skipped by a policy: it was
// abandoned by the Shutdown.
func TestFlushNotNilWhenShutdownAbandonsValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := broadcast.New[int](broadcast.Options{QueueLength: 1}) // Block
		w, _ := b.Watch()
		publish(t, b, 1, 2) // 2 waits for room that never comes
		flushed := make(chan error, 1)
		go func() { flushed <- b.Flush(context.Background()) }()
		synctest.Wait() // Flush's marker is queued behind 2
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := b.Shutdown(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Shutdown() = %v, want Canceled", err)
		}
		err := <-flushed
		if err == nil && w.Delivered() != 2 {
			t.Errorf("Flush() = nil, but Delivered() = %d, Dropped() = %d (by Shutdown, not by policy): value 2, queued before Flush, was never placed",
				w.Delivered(), w.Dropped())
		}
	})
}
