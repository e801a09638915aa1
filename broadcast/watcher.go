package broadcast

import (
	"context"
	"iter"
	"sync"
	"sync/atomic"
)

// Watcher receives the values of one Broadcaster, in queue order, from the
// moment it was registered until it is stopped or the broadcaster shuts
// down. Read it in one of three ways, which share one queue (each value goes
// to whichever read takes it):
//
//   - All, an iterator, the fastest: it takes the queued values in batches;
//   - Next, one value at a time with a context;
//   - Events, a channel, for use in select statements. The first call
//     switches the watcher to channel delivery for good; All and Next then
//     read the channel too.
//
// A Watcher is safe for concurrent use. Its zero value is not usable; get
// one from Broadcaster.Watch, WatchWith or WatchWithPrefix, and call Stop
// when done with it.
type Watcher[T any] struct {
	b        *Broadcaster[T]
	full     FullPolicy // resolved: never the zero value
	stopOnce sync.Once

	dropped   atomic.Uint64          // see Dropped
	delivered atomic.Uint64          // see Delivered
	events    atomic.Pointer[chan T] // ch, for reads without mu

	// Channel delivery, set by Events under mu before ch is visible, then
	// owned by the distributor: values sent on ch so far (those Events
	// moved there included), and how many of the first ones came from
	// front and so must never be dropped.
	chSent   uint64
	chPinned uint64

	mu sync.Mutex
	// front holds values owed before the queue that no policy may drop:
	// the prefix of WatchWithPrefix, and values an All loop took but did
	// not yield.
	front []T
	queue ring[T] // published values, until Events is called
	ch    chan T  // non-nil once Events was called: the queue from then on
	// closed is set, and done closed, by the distributor alone: nothing
	// more will be added. Queued values stay readable. The distributor
	// reads closed without mu, as no other goroutine writes it.
	closed   bool
	done     chan struct{}
	switched chan struct{} // closed when ch is set
	readers  waitq         // Next and All calls waiting for values
	writer   waitq         // the distributor waiting for room (Block)
}

func newWatcher[T any](b *Broadcaster[T], qlen int, full FullPolicy, prefix []T) *Watcher[T] {
	w := &Watcher[T]{
		b:        b,
		full:     full,
		queue:    ring[T]{limit: qlen},
		done:     make(chan struct{}),
		switched: make(chan struct{}),
		readers:  newWaitq(),
		writer:   newWaitq(),
	}
	if len(prefix) > 0 {
		w.front = append([]T(nil), prefix...)
	}
	return w
}

// Events returns the channel on which the watcher's values arrive. The
// channel is closed after Stop or Shutdown, once the distributor has
// delivered what it owed; values already in it stay readable.
//
// The first call switches the watcher to channel delivery: what is queued
// moves into a new channel whose capacity is the watcher's queue length
// plus the prefix values still unread, and every Next and All call, parked
// or not, reads that channel from then on. A channel costs one channel
// operation per value; All is faster where a loop will do.
func (w *Watcher[T]) Events() <-chan T {
	if p := w.events.Load(); p != nil {
		return *p
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.switchLocked()
	}
	return w.ch
}

// switchLocked moves the queued values, front first, into a new channel
// and makes it the watcher's queue.
func (w *Watcher[T]) switchLocked() {
	ch := make(chan T, w.queue.limit+len(w.front))
	for _, v := range w.front {
		ch <- v
	}
	for _, v := range w.queue.popTo(nil, w.queue.len()) {
		ch <- v
	}
	w.chPinned, w.chSent = uint64(len(w.front)), uint64(len(ch))
	w.front, w.queue = nil, ring[T]{}
	w.ch = ch
	if w.closed {
		close(ch)
	}
	w.events.Store(&ch)
	close(w.switched)     // every parked reader moves to the channel
	w.writer.wakeLocked() // so does the distributor, if it waits for room
}

// Next returns the watcher's next value, waiting for one if none is queued.
// It returns ctx.Err() if ctx ends first, and ErrClosed once the watcher is
// stopped or its broadcaster shut down and every queued value has been read.
// A queued value wins over an ended ctx. Next panics on a nil ctx.
func (w *Watcher[T]) Next(ctx context.Context) (T, error) {
	if ctx == nil {
		panic("broadcast: nil Context")
	}
	if p := w.events.Load(); p != nil {
		return receive(ctx, *p)
	}
	var one [1]T
	got, ch, err := w.take(ctx, one[:0], 1)
	switch {
	case ch != nil:
		return receive(ctx, ch)
	case err != nil:
		var zero T
		return zero, err
	}
	return got[0], nil
}

// receive is Next on channel delivery.
func receive[T any](ctx context.Context, ch chan T) (T, error) {
	select {
	case v, ok := <-ch:
		return v, closedErr(ok)
	default:
	}
	select {
	case v, ok := <-ch:
		return v, closedErr(ok)
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

func closedErr(ok bool) error {
	if ok {
		return nil
	}
	return ErrClosed
}

// All returns an iterator over the watcher's values. Each iteration waits
// for values and ends once the watcher is stopped or its broadcaster shut
// down and every queued value has been read. All takes whatever is queued in
// one step, so it costs far less per value than Events or Next. When the
// loop ends early (break, return, or a panic in its body), the values it
// took but did not yield are put back in front of the queue for the next
// read, in order; if Events was called meanwhile they cannot be put in
// front of the channel, and are counted as lost (Stats.DroppedSwitch).
func (w *Watcher[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		var buf []T
		for {
			var ch chan T
			var err error
			if p := w.events.Load(); p != nil {
				ch = *p
			} else {
				buf, ch, err = w.take(context.Background(), buf[:0], -1)
			}
			switch {
			case ch != nil:
				for v := range ch {
					if !yield(v) {
						return
					}
				}
				return
			case err != nil:
				return
			case !w.yieldAll(buf, yield):
				return
			}
			clear(buf)
		}
	}
}

// yieldAll yields vals in order and reports whether the loop goes on. If
// the loop ends before the last one, however it ends, the values not yet
// yielded are put back.
func (w *Watcher[T]) yieldAll(vals []T, yield func(T) bool) bool {
	i := 0
	defer func() {
		if i < len(vals) {
			w.putBack(vals[i:])
		}
	}()
	for i < len(vals) {
		v := vals[i]
		i++
		if !yield(v) {
			return false
		}
	}
	return true
}

// putBack returns values an All loop took but did not yield to the front of
// the queue.
func (w *Watcher[T]) putBack(vals []T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil {
		// Events was called while the loop held these values; a channel
		// has no front to put them back at, and behind newer values they
		// would be out of order.
		w.b.drop(w, len(vals), dropSwitch)
		return
	}
	w.front = append(append(make([]T, 0, len(vals)+len(w.front)), vals...), w.front...)
	w.readers.wakeLocked()
}

// take appends queued values to buf, front first, at most limit of them
// (all if limit is negative), waiting until there is at least one. It
// returns the channel instead once the watcher delivers through one;
// ErrClosed once the watcher is closed and empty; ctx.Err() if ctx ends
// while nothing is queued.
func (w *Watcher[T]) take(ctx context.Context, buf []T, limit int) ([]T, chan T, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.ch == nil && len(w.front)+w.queue.len() == 0 {
		if w.closed {
			return buf, nil, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return buf, nil, err
		}
		w.waitLocked(ctx)
	}
	if w.ch != nil {
		return buf, w.ch, nil
	}
	if limit < 0 {
		limit = len(w.front) + w.queue.len()
	}
	k := min(limit, len(w.front))
	buf = append(buf, w.front[:k]...)
	clear(w.front[:k])
	if w.front = w.front[k:]; len(w.front) == 0 {
		w.front = nil
	}
	buf = w.queue.popTo(buf, min(limit-k, w.queue.len()))
	w.writer.wakeLocked() // room for a Block watcher
	if len(w.front)+w.queue.len() > 0 {
		w.readers.wakeLocked() // the hand-off: more for another reader
	}
	return buf, nil, nil
}

// waitLocked parks the caller until values arrive, the watcher closes or
// switches to channel delivery, or ctx ends.
func (w *Watcher[T]) waitLocked(ctx context.Context) {
	c := w.readers.parkLocked()
	w.mu.Unlock()
	select {
	case <-c:
	case <-w.done:
	case <-w.switched:
	case <-ctx.Done():
	}
	w.mu.Lock()
	w.readers.unparkLocked()
}

// Stop ends the watcher: the broadcaster delivers nothing more to it, and
// once Stop returns its Events channel is closed and Next and All end after
// the values still queued. Stop is idempotent, safe to call from any
// goroutine (including the one reading), and never waits for a value to be
// read, by this watcher or by any other.
func (w *Watcher[T]) Stop() {
	w.stopOnce.Do(func() { w.b.requestStop(w) })
	select {
	case <-w.done:
	case <-w.b.done: // the distributor closed every watcher on its way out
	}
}

// Dropped returns how many values owed to this watcher were lost: skipped
// or discarded by its FullPolicy, abandoned by a Shutdown whose context
// ended, or held by an All loop that ended after a switch to Events. Each is
// also counted in one Dropped field of the broadcaster's Stats.
func (w *Watcher[T]) Dropped() uint64 { return w.dropped.Load() }

// Delivered returns how many published values were placed in this
// watcher's queue (a prefix is not counted). For each watcher,
// Delivered = values read + values still queued + those dropped from the
// queue (DropOldest's discards and DroppedSwitch). After Broadcaster.Flush
// returns, it counts every value queued before the call that this
// watcher's policy did not skip.
func (w *Watcher[T]) Delivered() uint64 { return w.delivered.Load() }
