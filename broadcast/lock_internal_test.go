package broadcast

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gateCtx is a Context whose Err blocks, once armed, until released: user
// code, as every Context implementation is.
type gateCtx struct {
	context.Context
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

// TestPublishRunsNoContextUnderTheLock: doc.go says "No method runs
// user code", and TryPublish and Watch "never block". Publish calls ctx.Err
// (a method of a caller-supplied interface) while it holds the
// broadcaster's one mutex: for as long as that call takes, every
// TryPublish, Watch, Stats and Flush call, and the distributor, wait for
// it, and a Context whose Err calls back into the broadcaster (say, to log
// b.Stats()) deadlocks. Next likewise calls ctx.Err under the watcher's
// mutex, which the distributor needs to deliver to that watcher.
func TestPublishRunsNoContextUnderTheLock(t *testing.T) {
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
