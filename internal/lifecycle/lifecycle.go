// Package lifecycle is the one way herald's types shut their goroutines
// down. A Group counts one owner's goroutines and carries the two moments
// that end them, each a context: Stopping, done once the shutdown begins
// (start nothing new, finish what is queued), and Aborting, done once a
// shutdown's deadline passed (abandon what is left, count it, return).
// Shutdown is the sequence every owner needs: stop, wait for the
// goroutines or the deadline, abort, join.
package lifecycle

import (
	"context"
	"sync"
)

// Group is the goroutines of one owner. Its zero value is not usable;
// create one with New. It is safe for concurrent use.
type Group struct {
	stopping   context.Context
	stop       context.CancelFunc
	aborting   context.Context
	abort      context.CancelFunc
	exited     chan struct{} // closed once stopped and no goroutine is left
	mu         sync.Mutex    // guards stopped, live and exitedSent
	stopped    bool
	live       int
	exitedSent bool
}

// New returns a running Group.
func New() *Group {
	g := &Group{exited: make(chan struct{})}
	g.stopping, g.stop = context.WithCancel(context.Background())
	g.aborting, g.abort = context.WithCancel(context.Background())
	return g
}

// Go runs f on a goroutine of the group and reports true, or reports
// false, running nothing, once the shutdown has begun.
func (g *Group) Go(f func()) bool {
	if !g.Add() {
		return false
	}
	go func() {
		defer g.Done()
		f()
	}()
	return true
}

// Relay runs f on a new goroutine of the group that takes the place of
// the calling one, a goroutine of the group about to end: unlike Go, it
// runs f after the shutdown began too (the caller, still counted, keeps
// the group from having exited). For a goroutine that must go on when a
// caller's code ends the one it ran on (runtime.Goexit).
func (g *Group) Relay(f func()) {
	g.mu.Lock()
	if g.exitedSent {
		g.mu.Unlock()
		panic("lifecycle: Relay from a goroutine the group does not count: it has exited")
	}
	g.live++
	g.mu.Unlock()
	go func() {
		defer g.Done()
		f()
	}()
}

// Add counts one more goroutine about to start, for an owner that starts
// it itself. It reports false, counting nothing, once the shutdown has
// begun.
func (g *Group) Add() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
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
	g.closeExitedLocked()
}

func (g *Group) closeExitedLocked() {
	if g.stopped && g.live == 0 && !g.exitedSent {
		g.exitedSent = true
		close(g.exited)
	}
}

// Stop begins the shutdown: Add and Go refuse from now on and Stopping is
// done. It reports whether this call began it.
func (g *Group) Stop() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return false
	}
	g.stopped = true
	g.stop()
	g.closeExitedLocked()
	return true
}

// Wait waits, after Stop, until every goroutine has ended. If ctx ends
// first, it aborts and returns ctx.Err() without waiting further: for an
// owner whose goroutines may be stuck in a caller's code.
func (g *Group) Wait(ctx context.Context) error {
	select {
	case <-g.exited:
		return nil
	case <-ctx.Done():
	}
	select {
	case <-g.exited: // both were ready
		return nil
	default:
	}
	g.Abort()
	return ctx.Err()
}

// Shutdown stops the group and waits until every goroutine has ended. If
// ctx ends first, it aborts and then still waits: every goroutine of an
// owner that uses it must end promptly once Aborting is done. It returns
// nil, or ctx.Err() if it had to abort.
func (g *Group) Shutdown(ctx context.Context) error {
	g.Stop()
	err := g.Wait(ctx)
	<-g.exited
	return err
}

// Abort cuts the shutdown short: Aborting is done from now on. It is
// idempotent.
func (g *Group) Abort() { g.abort() }

// Stopping is done once the shutdown has begun.
func (g *Group) Stopping() context.Context { return g.stopping }

// Aborting is done once the shutdown was cut short. A goroutine passes it
// to calls that may wait, or selects on its Done, rather than polling.
func (g *Group) Aborting() context.Context { return g.aborting }

// Aborted reports whether the shutdown was cut short.
func (g *Group) Aborted() bool { return g.aborting.Err() != nil }

// Exited is closed once the shutdown has begun and every goroutine has
// ended.
func (g *Group) Exited() <-chan struct{} { return g.exited }

// Live returns the number of goroutines counted that have not ended.
func (g *Group) Live() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.live
}
