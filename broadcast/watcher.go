package broadcast

import (
	"context"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/heraldgo/herald/internal/ring"
	"github.com/heraldgo/herald/internal/wait"
)

// Watcher receives the values of one Broadcaster, in queue order, from the
// moment it was registered until it is stopped or the broadcaster shuts
// down. Read it in one of two modes, chosen by its first read:
//
//   - a queue watcher, first read by All or Next: All, an iterator, is the
//     fastest, taking the queued values in batches; Next takes one value
//     at a time with a context. The two mix freely.
//   - a channel watcher, first read by Events: the values arrive on a
//     channel, for use in select statements; All and Next read that
//     channel too. Events on a queue watcher panics.
//
// A Watcher is safe for concurrent use. Its zero value is not usable; get
// one from Broadcaster.Watch, WatchWith or WatchWithPrefix, and call Stop
// when done with it.
type Watcher[T any] struct {
	b        *Broadcaster[T]
	full     FullPolicy // resolved: never the zero value
	prefix   uint64     // length of the prefix
	id       uint64     // see Backlog.Watcher; set before the watcher is returned
	stopOnce sync.Once

	// events is read by readers before every batch and written once: on a
	// cache line apart from what the distributor writes per batch.
	events atomic.Pointer[chan T] // ch, for reads without mu
	_      [64]byte

	dropped atomic.Uint64 // see Dropped
	// chDelivered counts values sent on ch; pushed (under mu) those added
	// to the ring. Delivered is their sum.
	chDelivered atomic.Uint64

	// A channel watcher's counts, set under mu before ch is visible, then
	// owned by the distributor: values sent on ch so far (those Events
	// moved there included), and how many of the first ones are prefix
	// values, which no policy may drop.
	chSent   uint64
	chPinned uint64
	active   bool // its registration marker has been reached; owned by the distributor

	// mu guards front, queue, back, pushed, pulled, ch, closed, and the
	// parked counts of readers and writer.
	mu sync.Mutex
	// Every value owed to the watcher has an index, its place in queue
	// order: the prefix takes 0 to prefix-1, published values follow.
	// front holds values owed before the ring, by index: the prefix, and
	// values an All loop took and handed back. queue holds the published
	// values from index prefix+pushed-queue.Len() on.
	front  []held[T]
	queue  ring.Ring[T]
	back   int    // published values in front (after its prefix values): they count against the queue length
	pushed uint64 // values ever added to queue, DropOldest's discards included: see Delivered
	pulled bool   // Next or All read first: a queue watcher, on which Events panics
	ch     chan T // non-nil once Events read first: a channel watcher, whose queue ch is
	// closed is set, and closeDone closed, by the distributor alone:
	// nothing more will be added. Queued values stay readable. The
	// distributor reads closed without mu, as no other goroutine writes it.
	closed    bool
	closeDone chan struct{}
	readers   wait.Queue // Next and All calls waiting for values or the close
	writer    wait.Queue // the distributor waiting for room (Block)
}

// held is a value owed to a watcher ahead of its ring, with its index.
type held[T any] struct {
	idx uint64
	v   T
}

func newWatcher[T any](b *Broadcaster[T], qlen int, full FullPolicy, prefix []T) *Watcher[T] {
	w := &Watcher[T]{
		b:         b,
		full:      full,
		queue:     ring.New[T](qlen),
		prefix:    uint64(len(prefix)),
		closeDone: make(chan struct{}),
		readers:   wait.NewQueue(),
		writer:    wait.NewQueue(),
	}
	if len(prefix) > 0 {
		w.front = make([]held[T], len(prefix))
		for i, v := range prefix {
			w.front[i] = held[T]{uint64(i), v}
		}
	}
	return w
}

// eventsAfterPull is Events' panic on a queue watcher.
const eventsAfterPull = "broadcast: Watcher.Events after Next or All: a watcher's read mode is chosen by its first read"

// Events returns the channel on which the watcher's values arrive, for
// select statements. The channel is closed after Stop or Shutdown, once the
// distributor has delivered what it owed; values already in it stay
// readable.
//
// A watcher's first read chooses its read mode for good. Called before any
// Next or All, Events makes the watcher a channel watcher: the distributor
// sends its values straight into a channel of the watcher's queue length,
// plus room for the prefix when it has one (see WatchWithPrefix), and Next
// and All read that channel too. The Drop policies keep published values
// within the queue length; under Block, the prefix's room, once read,
// holds published values too (a channel cannot shrink, and a receive
// wakes no one), so such a channel holds up to queue length plus prefix. Called after Next or All, on a queue
// watcher, Events panics: call it first, or read with Next and All alone.
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
	case w.pulled:
		panic(eventsAfterPull)
	}
	w.toChannelLocked()
	return w.ch
}

// toChannelLocked makes w, which nothing has read yet, a channel watcher:
// its prefix and the values queued in its ring move, in order, into a new
// channel, which from then on is its queue.
func (w *Watcher[T]) toChannelLocked() {
	// Nothing was read, so nothing was handed back: front is the prefix.
	ch := make(chan T, w.queue.Limit()+len(w.front))
	for _, h := range w.front {
		ch <- h.v
	}
	for w.queue.Len() > 0 {
		ch <- w.queue.Pop()
	}
	w.chPinned, w.chSent = uint64(len(w.front)), uint64(len(ch))
	w.front, w.queue = nil, ring.New[T](w.queue.Limit())
	w.ch = ch
	if w.closed {
		close(ch)
	}
	w.events.Store(&ch)
	// The distributor, if it waits for room in the ring, sends on ch now.
	wait.Signal(w.writer.WakeLocked())
}

// Next returns the watcher's next value, waiting for one if none is queued.
// It returns ctx.Err() if ctx ends first, and ErrClosed once the watcher is
// stopped or its broadcaster shut down and every queued value has been read.
// A queued value wins over an ended ctx. Next panics on a nil ctx. A first
// read by Next makes the watcher a queue watcher (see Events).
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

// receive is Next on a channel watcher.
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
// down and every queued value has been read. A first read by All makes the
// watcher a queue watcher (see Events).
//
// On a queue watcher, All takes whatever is queued in one step, so it costs
// far less per value than Events or Next. When the loop ends early (break,
// return, or a panic in its body), the values it took but did not yield go
// back to the queue, in their place, for the next read. They count against
// the queue length again: a Block or DropNewest watcher has that much less
// room for new values until they are read, and a DropOldest watcher
// discards them first, as the oldest. If the queue filled while the loop
// held them, the watcher holds more than its queue length until readers
// take the excess, or, with DropOldest, until the next value comes.
//
// The values a loop took are its own until it yields them or ends. Inside
// its body, a Next call or a nested All loop on the same watcher does not
// see them: it reads as if they had been read, taking values queued after
// them, which the reader then sees first, out of queue order, or waiting
// for one. To read the next value in the body, let the loop yield it.
func (w *Watcher[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		var bt batch[T]
		defer w.endLoan(&bt) // the loop ended: break, return or a panic
		for {
			ch, err := w.takeBatch(&bt)
			if ch != nil { // a channel watcher
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
	case <-w.closeDone:
	case <-w.b.life.Exited(): // the distributor closed every watcher on its way out
	}
}

// Dropped returns how many values owed to this watcher were lost: skipped
// or discarded by its FullPolicy, or abandoned by a Shutdown whose context
// ended. Each is also counted in one Dropped field of the broadcaster's
// Stats.
func (w *Watcher[T]) Dropped() uint64 { return w.dropped.Load() }

// Delivered returns how many published values were placed in this
// watcher's queue (a prefix is not counted). For each watcher,
// prefix length + Delivered = values read + values still queued + values
// DropOldest discarded from the queue. After Broadcaster.Flush returns
// nil, it counts every value queued before the call that this watcher's
// policy did not skip.
func (w *Watcher[T]) Delivered() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pushed + w.chDelivered.Load()
}
