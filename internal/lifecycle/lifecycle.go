// Package lifecycle counts the goroutines of one owner and tracks the
// phases of its shutdown: running; stopping (no goroutine may start any
// more, work in progress finishes); aborted (a shutdown deadline passed:
// what is left is abandoned); done (every goroutine has ended).
package lifecycle

import (
	"context"
	"sync"
)

// Group counts goroutines and the phases of their owner's shutdown. Its
// zero value is not usable; create one with New. It is safe for
// concurrent use.
type Group struct {
	stopping  chan struct{} // closed by Begin
	abort     chan struct{} // closed by Abort
	abortOnce sync.Once     // closes abort
	done      chan struct{} // closed once stopping and no goroutine is left

	mu       sync.Mutex // guards closing, live, doneSent
	closing  bool
	live     int
	doneSent bool
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
	g.closeDoneLocked()
}

// closeDoneLocked closes done once the shutdown has begun and the last
// goroutine has ended.
func (g *Group) closeDoneLocked() {
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
	g.closeDoneLocked()
	return true
}

// Wait waits, after Begin, until every goroutine has ended. If ctx ends
// first, it aborts (Aborted reports true from then on) and returns
// ctx.Err() without waiting further: a goroutine stuck in a call that
// never returns must not hold the caller.
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

// Live returns the number of goroutines counted by Add that have not
// ended.
func (g *Group) Live() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.live
}

// Abort marks the shutdown as cut short. It is idempotent.
func (g *Group) Abort() { g.abortOnce.Do(func() { close(g.abort) }) }

// Stopping is closed once the shutdown has begun.
func (g *Group) Stopping() <-chan struct{} { return g.stopping }

// Aborted reports whether the shutdown was cut short.
func (g *Group) Aborted() bool {
	select {
	case <-g.abort:
		return true
	default:
		return false
	}
}
