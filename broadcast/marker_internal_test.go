package broadcast

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestMarkerRunsAtItsPosition queues markers between concurrent publishers
// and checks, from inside each marker, that the values before its
// position, and only those, have been placed in a watcher's queue.
func TestMarkerRunsAtItsPosition(t *testing.T) {
	b := New[int](Options{QueueLength: 1 << 16, IncomingQueueLength: 4})
	defer b.Shutdown(context.Background())
	w, _ := b.Watch()
	defer w.Stop()
	if err := b.Flush(context.Background()); err != nil { // w is active from position 0
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 5000 {
				b.Publish(context.Background(), i)
			}
		})
	}
	type check struct{ pos, placed uint64 }
	checks := make(chan check, 200)
	for range 200 {
		b.mu.Lock()
		pos := b.enqueued
		b.queueMarkerLocked(marker[int]{run: func() { checks <- check{pos, w.Delivered()} }})
		b.mu.Unlock()
	}
	wg.Wait()
	if err := b.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(checks)
	for c := range checks {
		if c.placed != c.pos {
			t.Fatalf("marker at position %d ran with %d values placed, want exactly %d", c.pos, c.placed, c.pos)
		}
	}
}

// TestWatchersStoppedBeforeRegistrationAreReleased: while the distributor
// is held up by a full Block watcher, watchers registered and stopped
// before their markers are reached leave nothing behind but a bounded list
// of markers.
func TestWatchersStoppedBeforeRegistrationAreReleased(t *testing.T) {
	b := New[int](Options{QueueLength: 1})
	stuck, _ := b.Watch()
	b.Publish(context.Background(), 1)
	b.Publish(context.Background(), 2) // the distributor now waits for stuck
	for range 20000 {
		w, err := b.Watch()
		if err != nil {
			t.Fatal(err)
		}
		w.Stop()
	}
	b.mu.Lock()
	n := len(b.marks)
	b.mu.Unlock()
	if n > 200 {
		t.Errorf("%d markers kept for 20000 stopped watchers, want a bounded few", n)
	}
	if got := b.Stats().Watchers; got != 1 {
		t.Errorf("Stats().Watchers = %d, want 1", got)
	}
	stuck.Stop()
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestAbandonedFlushMarkersStayBounded: while the distributor is held
// up by a full Block watcher, every Flush that gives up (its context ends)
// leaves its marker queued: a health check that calls Flush with a timeout
// every few seconds grows the broadcaster's memory without bound for as
// long as the watcher stays stuck. Stopped watchers' markers are retired
// (serveStops); abandoned Flush markers never are.
func TestAbandonedFlushMarkersStayBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New[int](Options{QueueLength: 1})
		stuck, _ := b.Watch()
		b.Publish(context.Background(), 1)
		b.Publish(context.Background(), 2) // the distributor now waits for stuck
		const calls = 5000
		for range calls {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if err := b.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Flush() = %v, want DeadlineExceeded", err)
			}
			cancel()
		}
		// A Stop triggers the clean-up of markers that serveStops does.
		w, _ := b.Watch()
		w.Stop()
		b.mu.Lock()
		n := len(b.marks)
		b.mu.Unlock()
		if n > 200 {
			t.Errorf("%d markers kept for %d Flush calls that returned long ago, want a bounded few", n, calls)
		}
		stuck.Stop()
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestStopAfterShutdownRetainsNoWatcher: a Stop after Shutdown appends
// the watcher to b.stops, which no distributor will ever serve: every such
// watcher, with its queued values, stays reachable from the broadcaster.
func TestStopAfterShutdownRetainsNoWatcher(t *testing.T) {
	b := New[[]byte](Options{})
	var ws []*Watcher[[]byte]
	for range 100 {
		w, _ := b.Watch()
		ws = append(ws, w)
	}
	b.Publish(context.Background(), make([]byte, 1<<20)) // 1 MiB, queued for all
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		w.Stop()
	}
	b.mu.Lock()
	n := len(b.stops)
	b.mu.Unlock()
	if n != 0 {
		t.Errorf("%d stopped watchers retained by the shut-down broadcaster after their Stop", n)
	}
}

// TestUnreachedMarkersBoundedByOpenWatchers: serveStops says
// stopped watchers' markers are cleaned up "so that memory stays bounded
// by the watchers still open". While the distributor is held up, 1000
// watchers (each with a 64 KiB prefix) register and are then all stopped:
// the clean-up threshold was raised to twice the peak, so all 1000 markers,
// and with them the stopped watchers and their prefixes, stay reachable
// although only one watcher is open.
func TestUnreachedMarkersBoundedByOpenWatchers(t *testing.T) {
	b := New[[]byte](Options{QueueLength: 1})
	stuck, _ := b.Watch()
	b.Publish(context.Background(), nil)
	b.Publish(context.Background(), nil) // the distributor now waits for stuck
	var ws []*Watcher[[]byte]
	for range 1000 {
		w, err := b.WatchWith(WatchOptions{}, make([]byte, 64<<10))
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	w, _ := b.Watch()
	w.Stop() // a clean-up now sets the threshold from the 1000 open ones
	for _, w := range ws {
		w.Stop()
	}
	b.mu.Lock()
	n := len(b.marks)
	b.mu.Unlock()
	if open := b.Stats().Watchers; n > 2*open+64 {
		t.Errorf("%d markers of stopped watchers kept with %d watcher(s) open", n, open)
	}
	stuck.Stop()
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (c *gateCtx) Err() error {
	if c.armed.Load() {
		c.once.Do(func() {
			close(c.entered)
			<-c.release
		})
	}
	return c.Context.Err()
}
