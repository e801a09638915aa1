package broadcast

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestHostileAbandonedFlushMarkersAccumulate: while the distributor is held
// up by a full Block watcher, every Flush that gives up (its context ends)
// leaves its marker queued: a health check that calls Flush with a timeout
// every few seconds grows the broadcaster's memory without bound for as
// long as the watcher stays stuck. Stopped watchers' markers are retired
// (serveStops); abandoned Flush markers never are.
func TestHostileAbandonedFlushMarkersAccumulate(t *testing.T) {
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

// TestHostileStopAfterShutdownRetainsWatcher: a Stop after Shutdown appends
// the watcher to b.stops, which no distributor will ever serve: every such
// watcher, with its queued values, stays reachable from the broadcaster.
func TestHostileStopAfterShutdownRetainsWatcher(t *testing.T) {
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

// TestHostileUnreachedMarkersBoundedByPeakNotOpen: serveStops says
// stopped watchers' markers are cleaned up "so that memory stays bounded
// by the watchers still open". While the distributor is held up, 1000
// watchers (each with a 64 KiB prefix) register and are then all stopped:
// the clean-up threshold was raised to twice the peak, so all 1000 markers,
// and with them the stopped watchers and their prefixes, stay reachable
// although only one watcher is open.
func TestHostileUnreachedMarkersBoundedByPeakNotOpen(t *testing.T) {
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

// gateCtx is a Context whose Err blocks, once armed, until released: user
// code, as every Context implementation is.
type gateCtx struct {
	context.Context
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
	once    sync.Once
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

// TestHostilePublishRunsContextUnderTheLock: doc.go says "No method runs
// user code", and TryPublish and Watch "never block". Publish calls ctx.Err
// (a method of a caller-supplied interface) while it holds the
// broadcaster's one mutex: for as long as that call takes, every
// TryPublish, Watch, Stats and Flush call, and the distributor, wait for
// it, and a Context whose Err calls back into the broadcaster (say, to log
// b.Stats()) deadlocks. Next likewise calls ctx.Err under the watcher's
// mutex, which the distributor needs to deliver to that watcher.
func TestHostilePublishRunsContextUnderTheLock(t *testing.T) {
	b := New[int](Options{})
	defer b.Shutdown(context.Background())
	ctx := &gateCtx{Context: context.Background(), entered: make(chan struct{}), release: make(chan struct{})}
	ctx.armed.Store(true)
	published := make(chan error, 1)
	go func() { published <- b.Publish(ctx, 1) }()
	<-ctx.entered // Publish is running the caller's ctx.Err
	// The distributor may hold the mutex for a moment, so a TryLock could
	// fail for that alone: take the mutex, bounded. If Publish held it
	// while ctx.Err runs, this Lock waits until ctx.release, which only
	// the test closes, after the bound.
	locked := make(chan struct{})
	go func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		close(locked)
	}()
	select {
	case <-locked:
	case <-time.After(10 * time.Second):
		t.Errorf("Publish holds the broadcaster's mutex while it runs the caller's Context.Err: TryPublish, Watch and the distributor wait for user code")
	}
	close(ctx.release)
	<-locked
	if err := <-published; err != nil {
		t.Errorf("Publish() = %v", err)
	}
}
