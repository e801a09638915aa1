// Package lifecycle owns the goroutines of herald's Kubernetes adapters and
// the phases of their shutdown: running; stopping (no new goroutine, work
// in progress finishes without retries); aborted (a shutdown deadline
// passed: what is left is abandoned); done (every goroutine has ended).
package lifecycle

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Group counts goroutines and runs a shutdown over them. Its zero value
// is not usable; create one with New. It is safe for concurrent use.
type Group struct {
	mu       sync.Mutex // guards closing, live, doneSent
	closing  bool
	live     int
	doneSent bool

	stopping  chan struct{} // closed when the shutdown begins
	abort     chan struct{} // closed when a shutdown deadline passes
	abortOnce sync.Once
	done      chan struct{} // closed once closing and no goroutine is left
}

// New returns a running Group.
func New() *Group {
	return &Group{stopping: make(chan struct{}), abort: make(chan struct{}), done: make(chan struct{})}
}

// Add counts one more goroutine about to start. It reports false, counting
// nothing, once the shutdown has begun.
func (g *Group) Add() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return false
	}
	g.live++
	return true
}

// Done records the end of a goroutine counted by Add.
func (g *Group) Done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.live--
	g.signalLocked()
}

func (g *Group) signalLocked() {
	if g.closing && g.live == 0 && !g.doneSent {
		g.doneSent = true
		close(g.done)
	}
}

// Begin starts the shutdown: Add refuses from now on and Stopping is
// closed. It reports whether this call began it.
func (g *Group) Begin() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return false
	}
	g.closing = true
	close(g.stopping)
	g.signalLocked()
	return true
}

// Wait waits until every goroutine has ended, after Begin. If ctx ends
// first, it aborts (Aborted reports true from then on) and returns
// ctx.Err() without waiting further: a goroutine stuck in a call that never
// returns must not hold the caller.
func (g *Group) Wait(ctx context.Context) error {
	select {
	case <-g.done:
		return nil
	case <-ctx.Done():
	}
	select {
	case <-g.done: // both were ready
		return nil
	default:
	}
	g.Abort()
	return ctx.Err()
}

// Shutdown is the whole shutdown an adapter runs: Begin, then flush (which
// delivers what is queued to the goroutines and must return at once or at
// ctx's end), then Wait. On a flush error it aborts and returns that error.
func (g *Group) Shutdown(ctx context.Context, flush func(context.Context) error) error {
	g.Begin()
	if err := flush(ctx); err != nil {
		g.Abort()
		return err
	}
	return g.Wait(ctx)
}

// ShutdownWithin runs shutdown with a context that ends after d, and logs
// its error: the body of the adapters' argument-less Shutdown.
func ShutdownWithin(d time.Duration, shutdown func(context.Context) error, logger klog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		logger.Error(err, "Event broadcaster shutdown did not flush every event in time", "timeout", d)
	}
}

// Abort marks the shutdown as cut short.
func (g *Group) Abort() { g.abortOnce.Do(func() { close(g.abort) }) }

// Stopping is closed once the shutdown has begun.
func (g *Group) Stopping() <-chan struct{} { return g.stopping }

// IsStopping reports whether the shutdown has begun.
func (g *Group) IsStopping() bool {
	select {
	case <-g.stopping:
		return true
	default:
		return false
	}
}

// Aborted reports whether a shutdown deadline has passed.
func (g *Group) Aborted() bool {
	select {
	case <-g.abort:
		return true
	default:
		return false
	}
}

// Pause waits d on c. It reports false if the shutdown began first.
func (g *Group) Pause(c clock.Clock, d time.Duration) bool {
	if d <= 0 {
		return !g.IsStopping()
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-g.stopping:
		return false
	}
}
