package broadcast

import (
	"context"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/heraldgo/herald/internal/queue"
)

// Watcher receives the values of one Broadcaster, in queue order, from the
// moment it was registered until it is stopped or the broadcaster shuts
// down. How it is read is chosen when it is made (WatchOptions.Read):
//
//   - a queue watcher (ReadQueue, what Watch makes) is read with All, an
//     iterator that takes the queued values in batches, the fastest way to
//     read; NextBatch, up to n values at a time with a context; or Next,
//     one value at a time with a context. Events returns a closed channel.
//   - a channel watcher (ReadChannel) delivers into a channel, Events, for
//     select statements; All and Next read that channel too.
//
// A Watcher is safe for concurrent use. Its zero value is not usable; get
// one from Broadcaster.Watch or WatchWith, and call Stop when done with
// it.
type Watcher[T any] struct {
	b        *Broadcaster[T]
	full     FullPolicy // resolved: never the zero value
	prefix   uint64     // length of the prefix
	id       uint64     // see Backlog.Watcher; set before the watcher is returned
	stopOnce sync.Once

	// Exactly one of q and ch is set, when the watcher is made.
	q  *queue.Queue[T] // a queue watcher's queue
	ch chan T          // a channel watcher's channel (its queue)

	dropped atomic.Uint64 // see Dropped
	// chDelivered counts the published values sent on ch (a queue
	// watcher's queue counts its own).
	chDelivered atomic.Uint64

	// A channel watcher's counts, set before the watcher is registered,
	// then owned by the distributor: values sent on ch so far, the prefix
	// included, and how many of the first ones are prefix values, which no
	// policy may drop.
	chSent   uint64
	chPinned uint64
	active   bool // its registration marker has been reached; owned by the distributor
	// closed is set, and closeDone closed, by the distributor alone:
	// nothing more will be delivered. Queued values stay readable.
	closed    bool
	closeDone chan struct{}
}

func newWatcher[T any](b *Broadcaster[T], qlen int, full FullPolicy, read ReadMode, prefix []T) *Watcher[T] {
	w := &Watcher[T]{
		b:         b,
		full:      full,
		prefix:    uint64(len(prefix)),
		closeDone: make(chan struct{}),
	}
	if read == ReadQueue {
		w.q = queue.New(qlen, queuePolicy(full), prefix)
		return w
	}
	// The channel has room for the prefix as well: it takes no room in
	// the queue.
	w.ch = make(chan T, qlen+len(prefix))
	for _, v := range prefix {
		w.ch <- v
	}
	w.chPinned, w.chSent = w.prefix, w.prefix
	return w
}

// Events returns the channel on which a channel watcher's values arrive,
// for select statements. The channel is closed after Stop or Shutdown,
// once the distributor has delivered what it owed; values already in it
// stay readable. It holds the watcher's queue length of published values,
// plus room for the prefix (see WatchWith); under Block, the prefix's
// room, once read, holds published values too (a channel cannot shrink,
// and a receive wakes no one). A channel costs one channel operation per
// value; All is faster where a loop will do.
//
// On a queue watcher (ReadQueue, the watchers of Watch), Events returns a
// channel that is already closed: make a watcher meant for select
// statements with WatchOptions{Read: ReadChannel}.
func (w *Watcher[T]) Events() <-chan T {
	if w.ch != nil {
		return w.ch
	}
	ch := make(chan T)
	close(ch)
	return ch
}

// Next returns the watcher's next value, waiting for one if none is queued.
// It returns ctx.Err() if ctx ends first, and an error wrapping ErrClosed
// once the watcher is stopped or its broadcaster shut down and every
// queued value has been read. A queued value wins over an ended ctx. Next
// panics on a nil ctx.
//
// Called inside the body of an All loop on the same queue watcher, Next
// does not see the values that loop took and has not yet yielded: it
// returns a value queued after them, or waits for one, as if they had
// been read (see All).
func (w *Watcher[T]) Next(ctx context.Context) (T, error) {
	if ctx == nil {
		panic("broadcast: nil Context")
	}
	if w.ch != nil {
		return receive(ctx, w.ch)
	}
	v, err := w.q.Take(ctx.Done())
	return v, takeErr(ctx, err)
}

// takeErr is the error of a read whose take from the queue returned err.
func takeErr(ctx context.Context, err error) error {
	switch err {
	case nil:
		return nil
	case queue.ErrDone:
		return ctx.Err()
	}
	return errNextClosed
}

// NextBatch appends to dst the watcher's next values, at most n: it waits
// for one as Next does, then takes the values queued behind it, all under
// one lock on a queue watcher, which costs far less per value than Next.
// It returns dst with the values appended, or dst and Next's error
// (nothing appended then). A reader that hands values on to others in
// bounded room (workers, a batch write) takes what fits, and leaves the
// rest queued. NextBatch panics on a nil ctx or an n below 1.
//
// On a channel watcher it receives the first value as Next does, then the
// values ready on the channel, up to n. Called inside the body of an All
// loop on the same queue watcher, it does not see the values that loop
// took and has not yet yielded, as Next does not.
func (w *Watcher[T]) NextBatch(ctx context.Context, dst []T, n int) ([]T, error) {
	if ctx == nil {
		panic("broadcast: nil Context")
	}
	if n < 1 {
		panic("broadcast: non-positive n for Watcher.NextBatch")
	}
	if w.ch != nil {
		return receiveBatch(ctx, w.ch, dst, n)
	}
	dst, err := w.q.TakeUpTo(dst, n, ctx.Done())
	return dst, takeErr(ctx, err)
}

// receiveBatch is NextBatch on a channel watcher.
func receiveBatch[T any](ctx context.Context, ch chan T, dst []T, n int) ([]T, error) {
	v, err := receive(ctx, ch)
	if err != nil {
		return dst, err
	}
	dst = append(dst, v)
	for n--; n > 0; n-- {
		select {
		case v, ok := <-ch:
			if !ok {
				return dst, nil // the close is for the next call
			}
			dst = append(dst, v)
		default:
			return dst, nil
		}
	}
	return dst, nil
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
	return errNextClosed
}

// All returns an iterator over the watcher's values. Each iteration waits
// for values and ends once the watcher is stopped or its broadcaster shut
// down and every queued value has been read.
//
// On a queue watcher, All takes whatever is queued in one step, so it costs
// far less per value than Events or Next. When the loop ends early (break,
// return, or a panic in its body), the values it took but did not yield go
// back to the front of the queue, in order, for the next read. They count
// against the queue length again: a Block or DropNewest watcher has that
// much less room for new values until they are read, and a DropOldest
// watcher discards them first, as the oldest. If the queue filled while
// the loop held them, the watcher holds more than its queue length until
// readers take the excess, or, with DropOldest, until the next value
// comes.
//
// The values a loop took are its own until it yields them or ends. Inside
// its body, a Next call or a nested All loop on the same watcher does not
// see them: it reads as if they had been read, taking values queued after
// them, which the reader then sees first, out of queue order, or waiting
// for one. To read the next value in the body, let the loop yield it.
// Loops on several goroutines share the values, each value going to one
// of them; when two end early, the values the later one hands back go
// ahead of those of the earlier.
//
// On a channel watcher, All receives from the channel, one value at a
// time.
func (w *Watcher[T]) All() iter.Seq[T] {
	if w.ch != nil {
		return func(yield func(T) bool) {
			for v := range w.ch {
				if !yield(v) {
					return
				}
			}
		}
	}
	return w.q.All
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
	if w.ch != nil {
		return w.chDelivered.Load()
	}
	added, _ := w.q.Counts()
	return added
}
