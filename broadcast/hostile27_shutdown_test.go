package broadcast_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/broadcast"
)

// TestHostile27ShutdownBoundedByContext: a Block watcher that never reads
// holds the distributor back. Shutdown closes Done and refuses Watch,
// Publish and TryPublish the moment it begins, returns ctx.Err() when its
// context ends (not before), counts what the stuck watcher cannot take in
// its Dropped and in Stats.DroppedShutdown, still gives every other
// watcher every value, and from then on Shutdown and Flush return
// ErrClosed. Checked for a queue watcher and a channel watcher, with and
// without a prefix. The healthy watchers here drop by policy (a burst
// behind the stuck watcher may overrun them), and every loss is counted;
// a healthy Block watcher is the subject of
// TestHostile27AbortedShutdownDropsFromReadingBlockWatcher.
func TestHostile27ShutdownBoundedByContext(t *testing.T) {
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

// TestHostile27ShutdownConcurrentCallsAgree: once a Shutdown gave up on
// values, every other Shutdown call, concurrent or later, returns
// ErrClosed when the distributor has exited, and none returns before it.
func TestHostile27ShutdownConcurrentCallsAgree(t *testing.T) {
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
