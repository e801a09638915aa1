// Package wait parks goroutines until something they wait for happens:
// Queue, a condition guarded by its owner's mutex; Counter, a count that
// reaches a target.
package wait

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
)

// Signal makes a non-blocking send on c, a channel of capacity 1: a
// signal already pending is as good as two. A nil c sends nothing.
func Signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Queue parks goroutines until a condition, guarded by its owner's mutex,
// may have become true.
//
// A waiter, holding the mutex, finds the condition false, calls
// ParkLocked, unlocks, and receives from the channel it got (in a select
// with whatever else may end its wait); it then locks again, calls
// UnparkLocked and checks the condition anew. A goroutine that makes the
// condition true calls WakeLocked under the mutex and signals what it
// returns.
//
// The hand-off rule: one signal wakes one waiter. A waiter that wakes,
// takes its share and leaves the condition true for others calls
// WakeLocked before it unlocks, so that no waiter stays parked while the
// condition holds. The channel has room for one signal, so a signal sent
// between a waiter's unlock and its receive is kept, never lost; a signal
// nobody needed only makes the next waiter check its condition once more.
// A change that is final for every waiter is passed on by the same rule.
//
// Its zero value is not usable; create one with NewQueue. Its methods run
// under the owner's mutex.
type Queue struct {
	n int           // parked goroutines
	c chan struct{} // capacity 1
}

// NewQueue returns a Queue with no goroutine parked.
func NewQueue() Queue { return Queue{c: make(chan struct{}, 1)} }

// ParkLocked counts the caller as parked and returns the channel to wait
// on.
func (q *Queue) ParkLocked() <-chan struct{} {
	q.n++
	return q.c
}

// UnparkLocked counts the caller as no longer parked.
func (q *Queue) UnparkLocked() { q.n-- }

// Parked returns the number of goroutines parked.
func (q *Queue) Parked() int { return q.n }

// WakeLocked returns the channel to signal to wake one parked goroutine,
// or nil if none needs waking: none is parked, or a signal is still
// pending. The caller signals after it unlocks, so that the goroutine it
// wakes does not at once wait for the mutex its waker still holds; where
// that does not matter, Signal(q.WakeLocked()) under the lock will do.
func (q *Queue) WakeLocked() chan struct{} {
	if q.n > 0 && len(q.c) == 0 {
		return q.c
	}
	return nil
}

// C returns the channel WakeLocked hands out, for an owner that wakes a
// waiter whatever the count says (a single waiter that parks without
// counting itself).
func (q *Queue) C() chan struct{} { return q.c }

// ErrEnded is returned by Counter.Wait when the counter ended before it
// reached the target.
var ErrEnded = errors.New("wait: counter ended")

// Counter is a count that only grows, and the goroutines waiting until it
// reaches their targets. Its zero value is a count of zero, open. It is
// safe for concurrent use.
type Counter struct {
	n       atomic.Uint64
	waiting atomic.Bool   // len(waiters) > 0, so that Advance skips the lock
	least   atomic.Uint64 // the least target of waiters, when waiting
	mu      sync.Mutex    // guards waiters and ended
	waiters []waiter
	ended   bool
}

type waiter struct {
	target uint64
	ch     chan error // capacity 1: nil once reached, ErrEnded
}

// Load returns the count.
func (c *Counter) Load() uint64 { return c.n.Load() }

// Advance raises the count to n, if it is below, and releases the waiters
// whose target it reaches. Below every waiter's target it costs a few
// atomic loads.
func (c *Counter) Advance(n uint64) {
	for {
		old := c.n.Load()
		if n <= old || c.n.CompareAndSwap(old, n) {
			break
		}
	}
	if c.waiting.Load() && c.n.Load() >= c.least.Load() {
		c.release(nil)
	}
}

// Add raises the count by d and releases the waiters whose target it
// reaches.
func (c *Counter) Add(d uint64) {
	if n := c.n.Add(d); c.waiting.Load() && n >= c.least.Load() {
		c.release(nil)
	}
}

// End releases every waiter whose target is not reached with ErrEnded,
// and makes every later Wait do the same at once, until Reopen.
func (c *Counter) End() {
	c.mu.Lock()
	c.ended = true
	c.mu.Unlock()
	c.release(ErrEnded)
}

// Reopen undoes End: Wait waits again.
func (c *Counter) Reopen() {
	c.mu.Lock()
	c.ended = false
	c.mu.Unlock()
}

// release hands each waiter whose target is reached nil, and every other
// one err, if err is not nil.
func (c *Counter) release(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n.Load()
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		switch {
		case w.target <= n:
			w.ch <- nil
		case err != nil:
			w.ch <- err
		default:
			kept = append(kept, w)
		}
	}
	clear(c.waiters[len(kept):])
	c.waiters = kept
	c.waitersChangedLocked()
}

// waitersChangedLocked sets waiting and least from waiters.
func (c *Counter) waitersChangedLocked() {
	least := uint64(math.MaxUint64)
	for _, w := range c.waiters {
		least = min(least, w.target)
	}
	c.least.Store(least)
	c.waiting.Store(len(c.waiters) > 0)
}

// Wait returns nil once the count reaches target, ErrEnded if the counter
// ends first (or has ended), or ctx.Err() if ctx ends first.
func (c *Counter) Wait(ctx context.Context, target uint64) error {
	if c.n.Load() >= target {
		return nil
	}
	w := waiter{target: target, ch: make(chan error, 1)}
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		if c.n.Load() >= target {
			return nil
		}
		return ErrEnded
	}
	c.waiters = append(c.waiters, w)
	if len(c.waiters) == 1 || target < c.least.Load() {
		c.least.Store(target)
	}
	c.waiting.Store(true)
	c.mu.Unlock()
	if c.n.Load() >= target { // advanced before waiting was set
		c.release(nil)
	}
	select {
	case err := <-w.ch:
		return err
	case <-ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case err := <-w.ch: // released as ctx ended
		return err
	default:
	}
	for i, o := range c.waiters {
		if o.ch == w.ch {
			c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
			break
		}
	}
	c.waitersChangedLocked()
	return ctx.Err()
}
