package broadcast_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/broadcast"
)

// TestShutdownBoundedByContext: a Block watcher that never reads
// holds the distributor back. Shutdown closes Done and refuses Watch,
// Publish and TryPublish the moment it begins, returns ctx.Err() when its
// context ends (not before), counts what the stuck watcher cannot take in
// its Dropped and in Stats.DroppedShutdown, still gives every other
// watcher every value, and from then on Shutdown and Flush return
// ErrClosed. Checked for a queue watcher and a channel watcher, with and
// without a prefix. The healthy watchers here drop by policy (a burst
// behind the stuck watcher may overrun them), and every loss is counted;
// a healthy Block watcher is the subject of
// TestAbortedShutdownAccountsForEveryWatcher.
func TestShutdownBoundedByContext(t *testing.T) {
	for _, channel := range []bool{false, true} {
		for _, prefix := range [][]int{nil, {-2, -1}} {
			name := "queue"
			if channel {
				name = "channel"
			}
			if prefix != nil {
				name += "+prefix"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { shutdownBounded(t, channel, prefix) })
			})
		}
	}
}

func shutdownBounded(t *testing.T, channel bool, prefix []int) {
	b := broadcast.New[int](broadcast.Options{QueueLength: 3, IncomingQueueLength: 2})
	stuck, err := b.WatchWith(broadcast.WatchOptions{Full: broadcast.Block, Read: readMode(channel)}, prefix...)
	if err != nil {
		t.Fatal(err)
	}
	type healthy struct {
		w    *broadcast.Watcher[int]
		got  chan []int
		full broadcast.FullPolicy
	}
	var hs []healthy
	for _, full := range []broadcast.FullPolicy{broadcast.DropNewest, broadcast.DropOldest} {
		w, err := b.WatchWith(broadcast.WatchOptions{Full: full}, prefix...)
		if err != nil {
			t.Fatal(err)
		}
		h := healthy{w, make(chan []int, 1), full}
		go func() { h.got <- slices.Collect(w.All()) }()
		hs = append(hs, h)
	}
	const n = 10
	for i := range n {
		ok, err := b.TryPublish(i)
		for !ok && err == nil { // the incoming queue is full: let the distributor take it
			synctest.Wait()
			ok, err = b.TryPublish(i)
			if !ok && err == nil {
				break
			}
		}
		if !ok {
			// The distributor waits for the stuck watcher: publish the
			// rest on goroutines that Shutdown will refuse.
			break
		}
	}
	synctest.Wait()
	published := b.Stats().Published
	if published < 5 {
		t.Fatalf("only %d published before the distributor stalled", published)
	}
	select {
	case <-b.Done():
		t.Fatal("Done() closed before Shutdown")
	default:
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	returned := make(chan error, 1)
	go func() { returned <- b.Shutdown(ctx) }()
	synctest.Wait()
	select {
	case <-b.Done():
	default:
		t.Fatal("Done() still open while Shutdown waits")
	}
	select {
	case err := <-returned:
		t.Fatalf("Shutdown() = %v before its context ended", err)
	default:
	}
	if _, err := b.Watch(); !errors.Is(err, broadcast.ErrClosed) {
		t.Errorf("Watch() during Shutdown = %v, want ErrClosed", err)
	}
	if err := b.Publish(context.Background(), 99); !errors.Is(err, broadcast.ErrClosed) {
		t.Errorf("Publish() during Shutdown = %v, want ErrClosed", err)
	}
	if ok, err := b.TryPublish(99); ok || !errors.Is(err, broadcast.ErrClosed) {
		t.Errorf("TryPublish() during Shutdown = %v, %v, want false, ErrClosed", ok, err)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- b.Flush(context.Background()) }()

	if err := <-returned; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown() = %v, want DeadlineExceeded", err)
	}
	if waited := time.Since(start); waited != time.Minute {
		t.Errorf("Shutdown waited %v, want its context's minute", waited)
	}
	if err := <-flushed; !errors.Is(err, broadcast.ErrClosed) {
		t.Errorf("Flush() waiting through an aborted Shutdown = %v, want ErrClosed", err)
	}
	if err := b.Shutdown(context.Background()); !errors.Is(err, broadcast.ErrClosed) {
		t.Errorf("later Shutdown() = %v, want ErrClosed", err)
	}
	if err := b.Flush(context.Background()); !errors.Is(err, broadcast.ErrClosed) {
		t.Errorf("later Flush() = %v, want ErrClosed", err)
	}

	var held []int
	if channel {
		for v := range stuck.Events() {
			held = append(held, v)
		}
	} else {
		held = slices.Collect(stuck.All())
	}
	if !slices.Equal(held[:len(prefix)], prefix) {
		t.Errorf("stuck watcher held %v, want its prefix %v first", held, prefix)
	}
	queued := uint64(len(held) - len(prefix))
	if queued != 3 || queued+stuck.Dropped() != published || stuck.Delivered() != queued {
		t.Errorf("stuck watcher: %d queued (want its queue length 3), Dropped %d, Delivered %d; published %d",
			queued, stuck.Dropped(), stuck.Delivered(), published)
	}
	s := b.Stats()
	if s.DroppedShutdown != stuck.Dropped() || s.Watchers != 0 {
		t.Errorf("Stats() = %+v, want DroppedShutdown %d (the stuck watcher's)", s, stuck.Dropped())
	}
	policyDrops := map[broadcast.FullPolicy]uint64{}
	for _, h := range hs {
		got := <-h.got
		if !slices.Equal(got[:len(prefix)], prefix) {
			t.Errorf("healthy %v watcher read %v, want its prefix %v first", h.full, got, prefix)
			continue
		}
		rest := got[len(prefix):]
		if !slices.IsSorted(rest) || uint64(len(rest))+h.w.Dropped() != published {
			t.Errorf("healthy %v watcher read %v, Dropped %d; published %d", h.full, got, h.w.Dropped(), published)
		}
		policyDrops[h.full] += h.w.Dropped()
	}
	if s.DroppedNewest != policyDrops[broadcast.DropNewest] || s.DroppedOldest != policyDrops[broadcast.DropOldest] {
		t.Errorf("Stats() = %+v, healthy watchers dropped %v", s, policyDrops)
	}
}

// TestShutdownConcurrentCallsAgree: once a Shutdown gave up on
// values, every other Shutdown call, concurrent or later, returns
// ErrClosed when the distributor has exited, and none returns before it.
func TestShutdownConcurrentCallsAgree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := broadcast.New[int](broadcast.Options{QueueLength: 1})
		w, _ := b.Watch() // Block, never read
		publish(t, b, 1, 2, 3)
		synctest.Wait()
		short, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		results := make(chan error, 4)
		for range 3 {
			go func() { results <- b.Shutdown(context.Background()) }()
		}
		synctest.Wait()
		select {
		case err := <-results:
			t.Fatalf("a Shutdown() returned %v while the distributor waits", err)
		default:
		}
		if err := b.Shutdown(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown(short) = %v, want DeadlineExceeded", err)
		}
		for range 3 {
			if err := <-results; !errors.Is(err, broadcast.ErrClosed) {
				t.Errorf("concurrent Shutdown() = %v, want ErrClosed", err)
			}
		}
		if got := slices.Collect(w.All()); !slices.Equal(got, []int{1}) || w.Dropped() != 2 {
			t.Errorf("stuck watcher read %v, Dropped %d; want [1], 2", got, w.Dropped())
		}
	})
}

// TestEventsRacesStopAndShutdown: a channel watcher nothing has
// read yet, with a prefix and a full Block queue the distributor waits
// on, gets Events, Stop and Shutdown at once from three goroutines. The
// channel Events returns is closed in the end and yields the prefix, then
// published values in order from the first, with none skipped; Delivered
// counts exactly the published values it yields; nothing is dropped.
func TestEventsRacesStopAndShutdown(t *testing.T) {
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

// TestShutdownFromReaderEndsWithItsContext: called from the only reader of
// a full Block watcher, Shutdown cannot flush (its caller is the one who
// must make room); as its doc says, it returns when its context ends, and
// the values that reader missed are counted.
func TestShutdownFromReaderEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := broadcast.New[int](broadcast.Options{QueueLength: 1}) // Block
		w, _ := b.Watch()
		publish(t, b, 1, 2, 3)
		returned := make(chan error, 1)
		go func() {
			for range w.All() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				returned <- b.Shutdown(ctx) // e.g. on a fatal value
				return
			}
		}()
		if err := <-returned; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown() = %v, want DeadlineExceeded", err)
		}
		if w.Dropped() != 1 {
			t.Errorf("Dropped() = %d, want 1 (value 3: 2 waits in the queue)", w.Dropped())
		}
	})
}

// TestAbortedShutdownAccountsForEveryWatcher: once a Shutdown's
// context ends, no Block watcher is waited for. The values a stuck watcher
// held back reach a watcher that reads all along as a burst, and what its
// full queue cannot take is lost, as the Shutdown documentation says:
// every loss counted in DroppedShutdown and that watcher's Dropped, what
// it reads in order, nothing else missing.
func TestAbortedShutdownAccountsForEveryWatcher(t *testing.T) {
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

// TestClosedErrorsOnlyOnceDoneIsClosed: Done is open until Shutdown
// is called, and Publish, TryPublish and Watch, racing a Shutdown, return
// ErrClosed only once Done is closed; a Publish that returned nil had its
// value delivered to a watcher read all along.
func TestClosedErrorsOnlyOnceDoneIsClosed(t *testing.T) {
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
