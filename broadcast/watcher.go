package broadcast

import (
	"context"
	"errors"
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

	// events is read by readers before every batch and written once: on a
	// cache line apart from what the distributor writes per batch.
	events atomic.Pointer[chan T] // ch, for reads without mu
	_      [64]byte

	dropped atomic.Uint64 // see Dropped
	// chDelivered counts values sent on ch; pushed (under mu) those added
	// to the ring. Delivered is their sum.
	chDelivered atomic.Uint64

	// Channel delivery, set under mu before ch is visible, then owned by
	// the distributor: values sent on ch so far (those the switch moved
	// there included), and how many of the first ones are prefix values,
	// which no policy may drop.
	chSent   uint64
	chPinned uint64
	active   bool // its registration marker has run; owned by the distributor

	mu sync.Mutex
	// Every value owed to the watcher has an index, its place in queue
	// order: the prefix takes 0 to prefix-1, published values follow.
	// front holds values owed before the ring, by index: the prefix, and
	// values an All loop took and handed back. queue holds the published
	// values from index prefix+pushed-queue.len() on.
	front  []held[T]
	queue  ring[T]
	back   int    // published values in front (after its prefix values): they count against queue.limit
	prefix uint64 // length of the prefix
	pushed uint64 // values ever added to queue, DropOldest's discards included: see Delivered
	// lent counts All batches out (taken, not yet all yielded or handed
	// back) and lentVals their values; while any are out, a switch to
	// channel delivery waits in pending.
	lent     int
	lentVals int
	pending  chan T
	ch       chan T // non-nil once the switch is done: the queue from then on
	// closed is set, and done closed, by the distributor alone: nothing
	// more will be added. Queued values stay readable. The distributor
	// reads closed without mu, as no other goroutine writes it.
	closed  bool
	done    chan struct{}
	readers waitq // Next and All calls waiting for values, or a close or switch
	writer  waitq // the distributor waiting for room (Block)
}

// held is a value owed to a watcher ahead of its ring, with its index.
type held[T any] struct {
	idx uint64
	v   T
}

func newWatcher[T any](b *Broadcaster[T], qlen int, full FullPolicy, prefix []T) *Watcher[T] {
	w := &Watcher[T]{
		b:       b,
		full:    full,
		queue:   ring[T]{limit: qlen},
		prefix:  uint64(len(prefix)),
		done:    make(chan struct{}),
		readers: newWaitq(),
		writer:  newWaitq(),
	}
	if len(prefix) > 0 {
		w.front = make([]held[T], len(prefix))
		for i, v := range prefix {
			w.front[i] = held[T]{uint64(i), v}
		}
	}
	return w
}

// Events returns the channel on which the watcher's values arrive. The
// channel is closed after Stop or Shutdown, once the distributor has
// delivered what it owed; values already in it stay readable.
//
// The first call switches the watcher to channel delivery: what is queued
// moves, in order, into a new channel whose capacity is the watcher's
// queue length plus the values owed ahead of the queue at that moment (an
// unread prefix, values an All loop holds), and every Next and All call,
// parked or not, reads that channel from then on. If an All loop holds
// values (a batch it took), the switch waits until the loop has yielded
// them and comes back for more, or ends and hands the rest back; a receive
// from the channel inside that loop's body, before then, waits for ever.
// A channel costs one channel operation per value; All is faster where a
// loop will do.
func (w *Watcher[T]) Events() <-chan T {
	if p := w.events.Load(); p != nil {
		return *p
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.ch != nil:
		return w.ch
	case w.pending != nil:
		return w.pending
	}
	w.pending = make(chan T, w.queue.limit+len(w.front)+w.lentVals)
	if w.lent > 0 {
		return w.pending // switchLocked runs when the last loan ends
	}
	ch := w.pending
	w.switchLocked()
	return ch
}

// switchLocked moves the queued values, in order, into the pending channel
// and makes it the watcher's queue. Values an All loop still holds are not
// moved: the loop keeps yielding them, and if it ends early they are lost
// (see Stats.DroppedSwitch). That happens only when the watcher closed
// while the switch waited for the loop.
func (w *Watcher[T]) switchLocked() {
	ch := w.pending
	for _, h := range w.front {
		if h.idx < w.prefix {
			w.chPinned++
		}
		ch <- h.v
	}
	for _, v := range w.queue.popTo(nil, w.queue.len()) {
		ch <- v
	}
	w.chSent = uint64(len(ch))
	w.front, w.back, w.queue, w.pending = nil, 0, ring[T]{limit: w.queue.limit}, nil
	w.ch = ch
	if w.closed {
		close(ch)
	}
	w.events.Store(&ch)
	signal(w.readers.wakeLocked()) // and each passes it on: every parked reader moves to the channel
	signal(w.writer.wakeLocked())  // so does the distributor, if it waits for room
}

// Next returns the watcher's next value, waiting for one if none is queued.
// It returns ctx.Err() if ctx ends first, and ErrClosed once the watcher is
// stopped or its broadcaster shut down and every queued value has been read.
// A queued value wins over an ended ctx. Next panics on a nil ctx.
//
// Called inside the body of an All loop on the same watcher, Next does not
// see the values that loop took and has not yet yielded: it returns a value
// queued after them, or waits for one, as if they had been read (see All).
func (w *Watcher[T]) Next(ctx context.Context) (T, error) {
	if ctx == nil {
		panic("broadcast: nil Context")
	}
	if p := w.events.Load(); p != nil {
		return receive(ctx, *p)
	}
	var one [1]T
	got, ch, err := w.take(ctx.Done(), one[:0], 1)
	switch {
	case ch != nil:
		return receive(ctx, ch)
	case err == errDone:
		var zero T
		return zero, ctx.Err()
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
// took but did not yield go back to the queue, in their place, for the
// next read. They count against the queue length again: a Block or
// DropNewest watcher has that much less room for new values until they are
// read, and a DropOldest watcher discards them first, as the oldest. If the
// queue filled while the loop held them, the watcher holds more than its
// queue length until readers take the excess, or, with DropOldest, until
// the next value comes.
//
// The values a loop took are its own until it yields them or ends. Inside
// its body, a Next call or a nested All loop on the same watcher does not
// see them: it reads as if they had been read, taking values queued after
// them, which the reader then sees first, out of queue order, or waiting
// for one; a receive from Events there waits for ever (see Events). To
// read the next value in the body, let the loop yield it.
func (w *Watcher[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		var bt batch[T]
		defer w.endLoan(&bt) // the loop ended: break, return or a panic
		for {
			ch, err := w.takeBatch(&bt)
			if ch != nil {
				for v := range ch {
					if !yield(v) {
						return
					}
				}
				return
			}
			if err != nil {
				return
			}
			for _, v := range bt.vals {
				bt.next++
				if !yield(v) {
					return
				}
			}
		}
	}
}

// endLoan hands back what an All loop held when it ended, if anything.
func (w *Watcher[T]) endLoan(bt *batch[T]) {
	if bt.out {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.giveBackLocked(bt)
	}
}

// A batch is what an All loop took from the queue: its values, where they
// sat in queue order, and how many it has yielded. While out, it counts in
// the watcher's lent.
type batch[T any] struct {
	vals     []T
	frontIdx []uint64 // indices of vals[:len(frontIdx)], taken from front
	ringIdx  uint64   // index of the first value taken from the ring
	next     int      // vals[:next] are yielded
	out      bool
}

func (bt *batch[T]) index(i int) uint64 {
	if i < len(bt.frontIdx) {
		return bt.frontIdx[i]
	}
	return bt.ringIdx + uint64(i-len(bt.frontIdx))
}

// takeBatch ends the loan of the batch an All loop held, if any, and lends
// it the next one, waiting for values, under one lock. It returns the
// channel instead once the watcher delivers through one, and ErrClosed
// once it is closed and empty.
func (w *Watcher[T]) takeBatch(bt *batch[T]) (chan T, error) {
	if p := w.events.Load(); p != nil && !bt.out {
		return *p, nil
	}
	var ch chan T
	var err error
	bt.vals, ch, err = w.takeInto(nil, bt.vals, -1, bt)
	return ch, err
}

// giveBackLocked ends bt's loan: its values not yet yielded go back to
// front, in their place by index, and a switch to channel delivery that
// waited for the last loan takes place. After the switch, values cannot be
// put in front of the channel: they are counted as lost.
func (w *Watcher[T]) giveBackLocked(bt *batch[T]) {
	rest := bt.vals[bt.next:]
	bt.out = false
	w.lent--
	w.lentVals -= len(bt.vals)
	switch {
	case len(rest) == 0:
	case w.ch != nil:
		w.b.drop(w, len(rest), dropSwitch)
	default:
		back := make([]held[T], len(rest))
		for i, v := range rest {
			back[i] = held[T]{bt.index(bt.next + i), v}
			if back[i].idx >= w.prefix {
				w.back++ // a published value: it takes room in the queue again
			}
		}
		if len(w.front) == 0 {
			w.front = back // the usual case: one loop broke off
		} else {
			w.front = merge(w.front, back)
		}
		signal(w.readers.wakeLocked())
	}
	if w.lent == 0 && w.pending != nil {
		w.switchLocked()
	}
}

// merge returns the values of a and b, each sorted by index, in one slice
// sorted by index.
func merge[T any](a, b []held[T]) []held[T] {
	out := make([]held[T], 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].idx < b[0].idx {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// errDone tells take's callers that the done channel they gave was closed
// (their context ended); they return their context's error.
var errDone = errors.New("broadcast: context done")

// take appends up to limit queued values to the empty buf (all if limit
// is negative), in queue order, waiting until there is one. It returns the
// channel instead once the watcher delivers through one, ErrClosed once
// the watcher is closed and empty, and errDone if done is closed while
// nothing is queued. It never calls into the caller's context, so that no
// user code runs under mu.
func (w *Watcher[T]) take(done <-chan struct{}, buf []T, limit int) ([]T, chan T, error) {
	return w.takeInto(done, buf, limit, nil)
}

// takeInto is take; with bt non-nil the values are lent to bt, and the
// batch bt held, if any, is given back first (under the same lock).
func (w *Watcher[T]) takeInto(done <-chan struct{}, buf []T, limit int, bt *batch[T]) ([]T, chan T, error) {
	w.mu.Lock()
	buf, ch, err := w.takeLocked(done, buf, limit, bt)
	// The hand-off, after unlocking: room for the distributor if it waits
	// on a Block watcher, and whatever is left for the next reader.
	writer, reader := w.writer.wakeLocked(), w.passOnLocked()
	w.mu.Unlock()
	if writer != nil {
		signal(writer)
	}
	if reader != nil {
		signal(reader)
	}
	return buf, ch, err
}

// takeLocked is takeInto under w.mu.
func (w *Watcher[T]) takeLocked(done <-chan struct{}, buf []T, limit int, bt *batch[T]) ([]T, chan T, error) {
	if bt != nil {
		if bt.out {
			w.giveBackLocked(bt)
		}
		clear(buf)
		buf, bt.frontIdx = buf[:0], bt.frontIdx[:0]
	}
	for w.ch == nil && (w.pending != nil || len(w.front)+w.queue.len() == 0) {
		if w.closed && w.pending == nil {
			return buf, nil, ErrClosed
		}
		select {
		case <-done:
			return buf, nil, errDone
		default:
		}
		w.waitLocked(done)
	}
	if w.ch != nil {
		return buf, w.ch, nil
	}
	if limit < 0 {
		limit = len(w.front) + w.queue.len()
	}
	k := min(limit, len(w.front))
	for _, h := range w.front[:k] {
		buf = append(buf, h.v)
		if bt != nil {
			bt.frontIdx = append(bt.frontIdx, h.idx)
		}
		if h.idx >= w.prefix {
			w.back--
		}
	}
	clear(w.front[:k])
	if w.front = w.front[k:]; len(w.front) == 0 {
		w.front = nil
	}
	if bt != nil {
		bt.ringIdx = w.prefix + w.pushed - uint64(w.queue.len())
	}
	buf = w.queue.popTo(buf, min(limit-k, w.queue.len()))
	if bt != nil {
		bt.next, bt.out = 0, true
		w.lent++
		w.lentVals += len(buf) // buf was emptied above
	}
	return buf, nil, nil
}

// passOnLocked applies the hand-off rule to readers: a reader that leaves
// wakes the next parked one if there is anything for it — values, or a
// close or switch, which every reader must see. It returns the channel to
// signal once unlocked.
func (w *Watcher[T]) passOnLocked() chan struct{} {
	if len(w.front)+w.queue.len() > 0 || w.closed || w.ch != nil {
		return w.readers.wakeLocked()
	}
	return nil
}

// waitLocked parks the caller until another goroutine wakes it (values
// arrived, the watcher closed or switched to channel delivery, or another
// reader handed a wake-up on), or done is closed.
func (w *Watcher[T]) waitLocked(done <-chan struct{}) {
	c := w.readers.parkLocked()
	w.mu.Unlock()
	if done == nil { // All: nothing else ends the wait
		<-c
	} else {
		select {
		case <-c:
		case <-done:
		}
	}
	w.mu.Lock()
	w.readers.unparkLocked()
}

// Stop ends the watcher: the broadcaster delivers nothing more to it, and
// once Stop returns its Events channel is closed and Next and All end after
// the values still queued. Stop is idempotent, safe to call from any
// goroutine (including the one reading), and never waits for a value to be
// read, by this watcher or by any other; it waits only for the distributor
// to close the watcher, which it does even while it waits for room in a
// Block watcher.
func (w *Watcher[T]) Stop() {
	w.stopOnce.Do(func() { w.b.requestStop(w) })
	select {
	case <-w.done:
	case <-w.b.done: // the distributor closed every watcher on its way out
	}
}

// Dropped returns how many values owed to this watcher were lost: skipped
// or discarded by its FullPolicy, abandoned by a Shutdown whose context
// ended, or held by an All loop that ended early after the watcher closed
// while a switch to Events waited for it. Each is also counted in one
// Dropped field of the broadcaster's Stats.
func (w *Watcher[T]) Dropped() uint64 { return w.dropped.Load() }

// Delivered returns how many published values were placed in this
// watcher's queue (a prefix is not counted). For each watcher,
// prefix length + Delivered = values read + values still queued + values
// lost from the queue (DropOldest's discards and DroppedSwitch). After
// Broadcaster.Flush returns nil, it counts every value queued before the
// call that this watcher's policy did not skip.
func (w *Watcher[T]) Delivered() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pushed + w.chDelivered.Load()
}
