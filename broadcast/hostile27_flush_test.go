package broadcast_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/broadcast"
)

// TestHostile27FlushCountsWhatWasPublishedBefore: publishers and Flush
// callers run at once on a broadcaster with queue and channel watchers of
// every policy, some with a prefix, each read by its own goroutine. After
// each Flush returns nil, every value whose Publish returned before the
// Flush call is counted by every watcher: in Delivered, or, for
// DropNewest, in Delivered or Dropped; and the watchers' Delivered sums to
// Stats.Delivered once the broadcaster is shut down.
func TestHostile27FlushCountsWhatWasPublishedBefore(t *testing.T) {
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
	for p := range 3 {
		pubs.Go(func() {
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
				select {
				case <-stop:
					return
				default:
				}
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

// TestHostile27FlushEdges: Flush with nothing queued returns at once;
// Flush calls made with no value queued between them (sharing one marker)
// all return; a Flush whose context has ended returns its error; Flush
// after Shutdown completed returns ErrClosed.
func TestHostile27FlushEdges(t *testing.T) {
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

// TestHostile27DoneClosedWhenShutdownBegins: Done is open until Shutdown
// is called, and Publish, TryPublish and Watch, racing a Shutdown, return
// ErrClosed only once Done is closed; a Publish that returned nil had its
// value delivered to a watcher read all along.
func TestHostile27DoneClosedWhenShutdownBegins(t *testing.T) {
	for round := range 20 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			b := broadcast.New[int](broadcast.Options{IncomingQueueLength: 1 + round%3})
			w, _ := b.Watch()
			got := make(chan []int, 1)
			go func() { got <- slices.Collect(w.All()) }()
			var accepted [3][]int
			var wg sync.WaitGroup
			start := make(chan struct{})
			for p := range 3 {
				wg.Go(func() {
					<-start
					for i := 0; ; i++ {
						v := 100000*p + i
						var err error
						switch i % 3 {
						case 0:
							err = b.Publish(context.Background(), v)
						case 1:
							var ok bool
							ok, err = b.TryPublish(v)
							if !ok && err == nil {
								continue
							}
						default:
							var nw *broadcast.Watcher[int]
							nw, err = b.Watch()
							if err == nil {
								nw.Stop()
							}
							err2 := b.Publish(context.Background(), v)
							if err == nil {
								err = err2
							}
						}
						if err != nil {
							if !errors.Is(err, broadcast.ErrClosed) {
								t.Errorf("error %v", err)
							}
							select {
							case <-b.Done():
							default:
								t.Errorf("ErrClosed while Done() is open")
							}
							return
						}
						accepted[p] = append(accepted[p], v)
					}
				})
			}
			select {
			case <-b.Done():
				t.Fatal("Done() closed before Shutdown")
			default:
			}
			close(start)
			for b.Stats().Published < uint64(10*round) {
				runtime.Gosched() // let Shutdown land at a different point each round
			}
			ctx, cancel := context.WithTimeout(context.Background(), failsafe)
			defer cancel()
			if err := b.Shutdown(ctx); err != nil {
				t.Fatalf("Shutdown() = %v", err)
			}
			wg.Wait()
			read := <-got
			var want []int
			for _, a := range accepted {
				want = append(want, a...)
			}
			slices.Sort(want)
			sorted := slices.Sorted(slices.Values(read))
			if !slices.Equal(sorted, want) {
				t.Errorf("watcher read %d values, %d were accepted", len(read), len(want))
			}
			if s := b.Stats(); s.Published != uint64(len(want)) {
				t.Errorf("Published %d, accepted %d", s.Published, len(want))
			}
		})
	}
}
