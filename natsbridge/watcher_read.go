package natsbridge

import (
	"context"
	"errors"
	"iter"

	"github.com/nats-io/nats.go"

	"github.com/heraldgo/herald/handle"
	"github.com/heraldgo/herald/natsbridge/internal/queue"
)

// Reading a Watcher. A queue watcher (the default) is read with All and
// Next, a channel watcher (WatchOptions.Read: broadcast.ReadChannel) with
// Events, whose channel All and Next read too; the read mode is fixed when
// the watcher is made, and no read panics because of another. Each value
// handed to the application moves Seq; on a durable watcher it stays
// outstanding until the application is done with it (see Done), and
// values are acknowledged once done.

// All returns an iterator over the watcher's values. It ends once the
// watcher is stopped (or its stream deleted: see Err) and every value
// still queued has been read (a durable watcher hands back what is
// queued when it stops: its All ends at once). Poison messages are passed
// over (Stats counts them). A queue watcher's All takes what is queued in
// one step; values it took and had not yielded when the loop ends early
// go back to the queue, in order, for the next read.
//
// On a durable watcher, a value is done when the loop body returns for it
// (it ends normally, with break or return, or calls Stop): the watcher
// acknowledges it then, in the next batch. A body that panics leaves its
// value not done, and it comes again to the next reader.
func (w *Watcher[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		switch {
		case w.ch != nil:
			for v := range w.ch {
				if !yield(v) {
					return
				}
			}
		case w.d != nil:
			w.allDurable(yield)
		default:
			w.allQueued(yield)
		}
	}
}

// allQueued is All on a queue watcher that is not durable.
func (w *Watcher[T]) allQueued(yield func(T) bool) {
	var b queue.Batch[item[T]]
	defer w.q.PutBack(&b) // the loop ended early: break, return or a panic
	for w.q.TakeBatch(&b, nil) == nil {
		for it, ok := b.Next(); ok; it, ok = b.Next() {
			if it.err != nil {
				continue // a poison message
			}
			w.read(it)
			if !yield(it.v) {
				return
			}
		}
	}
}

// allDurable is All on a durable watcher: one value at a time, each done
// once the body returns for it.
func (w *Watcher[T]) allDurable(yield func(T) bool) {
	d := w.d
	for {
		d.readMu.Lock()
		it, err := w.takeDurable(context.Background(), false)
		d.readMu.Unlock()
		if err != nil {
			return
		}
		more := yield(it.v)
		w.doneSeq(it.seq)
		if !more {
			return
		}
	}
}

// Next returns the watcher's next value, waiting for one if none is queued.
// It returns ctx.Err() if ctx ends first, and ErrClosed once the watcher is
// stopped (or its stream deleted: see Err) and every queued value has been
// read. A queued value wins over an ended ctx. Poison messages are passed
// over (Stats counts them). On a channel watcher it reads the Events
// channel. It panics on a nil ctx.
//
// On a durable watcher, the value Next returned is done when Next is
// called again (whatever it returns), or when Done is called with its
// sequence (Seq): the watcher acknowledges it then, in the next batch. A
// value not done when the watcher stops comes again to the next reader.
func (w *Watcher[T]) Next(ctx context.Context) (T, error) {
	mustContext(ctx)
	var zero T
	switch {
	case w.ch != nil:
		select {
		case v, ok := <-w.ch:
			if ok {
				return v, nil
			}
			return zero, ErrClosed
		default:
		}
		select {
		case v, ok := <-w.ch:
			if ok {
				return v, nil
			}
			return zero, ErrClosed
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	case w.d != nil:
		return w.nextDurable(ctx)
	}
	for {
		it, err := w.q.Take(ctx.Done())
		switch {
		case errors.Is(err, queue.ErrDone):
			return zero, ctx.Err()
		case err != nil:
			return zero, w.errOf(err)
		case it.err != nil:
			continue // a poison message
		}
		w.read(it)
		return it.v, nil
	}
}

// nextDurable is Next on a durable watcher.
func (w *Watcher[T]) nextDurable(ctx context.Context) (T, error) {
	d := w.d
	d.readMu.Lock()
	defer d.readMu.Unlock()
	if d.last != 0 {
		last := d.last
		d.last = 0
		w.doneSeq(last)
	}
	it, err := w.takeDurable(ctx, false)
	if err != nil {
		var zero T
		return zero, err
	}
	d.last = it.seq
	return it.v, nil
}

// tryReceive is Receive without waiting (a group member's, which reads
// several): it returns errDone at once if no value is queued, or if the
// next may not be handed out yet (its reservation, the lease of a reader
// before, or the one-at-a-time hand-out after a death): the value waits
// in front of the queue, and the watcher's notify is signalled when the
// wait is over.
func (w *Watcher[T]) tryReceive() (handle.Delivery[T], error) {
	w.d.readMu.Lock()
	it, err := w.takeDurableDone(endedCtx.Done(), endedCtx, true)
	w.d.readMu.Unlock()
	switch {
	case errors.Is(err, context.Canceled):
		return handle.Delivery[T]{}, errDone
	case err != nil:
		return handle.Delivery[T]{}, err
	}
	return w.delivery(it), nil
}

// endedCtx is a context that has ended: a wait under it ends at once.
var endedCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// Receive is Next for a handle.Pool (a Watcher is a handle.AckSource):
// it returns the next value with its stream sequence (0 for a prefix
// value), its attempt (1, or for the first value a durable reader hands
// out after it took the position over, one more for each reader before it
// that died with that value unfinished: see the package doc, "Durable
// watchers"), and, for a message the codec could not
// decode, the codec's error in place of the value: Receive hands out
// poison messages, which All and Next pass over. On a durable watcher the
// value stays outstanding until Done names its sequence. It panics on a
// nil ctx.
func (w *Watcher[T]) Receive(ctx context.Context) (handle.Delivery[T], error) {
	mustContext(ctx)
	if w.ch != nil {
		v, err := w.Next(ctx)
		return handle.Delivery[T]{Value: v, Seq: w.Seq(), Attempt: 1}, err
	}
	var it item[T]
	if w.d != nil {
		w.d.readMu.Lock()
		var err error
		it, err = w.takeDurable(ctx, true)
		w.d.readMu.Unlock()
		if err != nil {
			return handle.Delivery[T]{}, err
		}
	} else {
		var err error
		it, err = w.q.Take(ctx.Done())
		switch {
		case errors.Is(err, queue.ErrDone):
			return handle.Delivery[T]{}, ctx.Err()
		case err != nil:
			return handle.Delivery[T]{}, w.errOf(err)
		}
		if it.err == nil {
			w.read(it)
		}
	}
	return w.delivery(it), nil
}

// delivery returns it as a handle.Delivery.
func (w *Watcher[T]) delivery(it item[T]) handle.Delivery[T] {
	// The readers that died with this value in their hands, as the
	// position's record counts them: the server's count of deliveries
	// starts again when a reader resets the position.
	attempt := 1
	if w.d != nil {
		attempt += w.d.keep.attemptsBefore(it.seq)
	}
	return handle.Delivery[T]{Value: it.v, Seq: it.seq, Attempt: attempt, Err: it.err, Turn: it.turn}
}

// Events returns the channel on which a channel watcher's values arrive,
// for select statements (WatchOptions.Read: broadcast.ReadChannel). The
// feed places values on it directly, by the watcher's policy; it is closed
// by Stop, or once the stream is deleted, and the values it holds stay
// readable. On a queue watcher (the default), Events returns a closed
// channel: make the watcher with broadcast.ReadChannel to read it so.
func (w *Watcher[T]) Events() <-chan T {
	if w.ch != nil {
		return w.ch
	}
	return closedChan[T]()
}

// closedChan returns a closed channel of T.
func closedChan[T any]() <-chan T {
	ch := make(chan T)
	close(ch)
	return ch
}

// Done marks the value at seq, handed out by a durable watcher, done: its
// handling is over (handled, or given up for good by the application), and
// the watcher acknowledges it with the next batch, once every value handed
// out before it is done too. All marks each value done when its loop body
// returns, Next when it is called again; Done is for an application that
// finishes values elsewhere, or out of order. Done of a sequence that is
// not outstanding (done already, never handed out, or on a watcher that is
// not durable) does nothing.
//
// A handle.Pool calls DoneTurn instead (see Holds).
func (w *Watcher[T]) Done(seq uint64) {
	if w.d != nil {
		w.doneSeq(seq)
	}
}

// doneSeq marks seq done on a durable watcher, and hands the position over
// if the watcher was stopped (its feed exited: see afterStop) and this was
// the last value outstanding.
func (w *Watcher[T]) doneSeq(seq uint64) { w.DoneTurn(seq, anyTurn) }

// takeDurable takes the next value of a durable watcher's queue and hands
// it out (poison: hands out poison messages too, rather than pass them
// over): it waits for the reservation to cover it, records it as
// outstanding, and counts it if it may have been handed out before. It
// returns ErrClosed once the watcher stopped, ctx.Err() if ctx ends first.
// The caller holds d.readMu.
func (w *Watcher[T]) takeDurable(ctx context.Context, poison bool) (item[T], error) {
	return w.takeDurableDone(ctx.Done(), ctx, poison)
}

// takeDurableDone is takeDurable that waits for a value until done is
// closed (closed already: it does not wait), and for its reservation until
// ctx ends.
func (w *Watcher[T]) takeDurableDone(done <-chan struct{}, ctx context.Context, poison bool) (item[T], error) {
	d := w.d
	for {
		it, ok := w.held.take()
		var err error
		if !ok {
			it, err = w.q.Take(done)
		}
		switch {
		case errors.Is(err, queue.ErrDone) && ctx.Err() == nil:
			return item[T]{}, errDone
		case errors.Is(err, queue.ErrDone):
			return item[T]{}, ctx.Err()
		case err != nil:
			return item[T]{}, w.errOf(err)
		}
		if it.seq == 0 { // a prefix value: nothing to acknowledge
			w.read(it)
			return it, nil
		}
		switch err := d.admit(ctx, it.seq, it.epoch); {
		case errors.Is(err, errFenced):
			w.handedBack.Add(1) // another reader gets it, or this one after a rewind
			continue
		case errors.Is(err, ErrClosed):
			w.handedBack.Add(1)
			return item[T]{}, ErrClosed
		case err != nil:
			w.held.giveBack(it, &w.handedBack)
			return item[T]{}, err
		}
		if it.err != nil && !poison {
			d.acks.hand(it.seq, it.msg, it.epoch, true) // passed over, and so done
			continue
		}
		if it.seq <= d.redeliverTo.Load() {
			d.redelivered.Add(1)
		}
		it.turn = d.acks.hand(it.seq, it.msg, it.epoch, false)
		w.read(it)
		return it, nil
	}
}

// admit returns once the value at seq, of epoch, may be handed out (see
// oneAtATime and keeper.reserve), or errFenced, ErrClosed, ctx.Err(). A
// value that comes again after a reset that rewound the feed (see
// durable.stale) is fenced: it was taken from the queue before the
// reset, and its reservation may have come after it.
func (d *durable) admit(ctx context.Context, seq, epoch uint64) error {
	if err := d.oneAtATime(ctx, seq); err != nil {
		return err
	}
	if err := d.keep.reserve(ctx, seq); err != nil {
		return err
	}
	if d.stale(seq, epoch) {
		return errFenced
	}
	return nil
}

// oneAtATime waits, for a value at seq in the eager range (after a reader
// died: see keeper.activate), until no value is outstanding, so that a
// value that kills its reader is the one the record counts; or ctx.Err().
func (d *durable) oneAtATime(ctx context.Context, seq uint64) error {
	if !d.acks.inEager(seq) {
		return nil
	}
	if _, idle := d.acks.outstanding(); idle != nil {
		select {
		case <-idle:
			return nil
		default:
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// read records that it was handed to the reader: its trace context and
// its sequence. The trace context goes first, so that a Seq that gives the
// value's sequence finds its trace context in place. A value without one
// stores nothing unless the value before had one: no store per value when
// nothing is traced.
func (w *Watcher[T]) read(it item[T]) {
	if last, _ := w.trace.Load().(nats.Header); it.h != nil || last != nil {
		w.trace.Store(it.h)
	}
	if it.seq != 0 {
		w.seq.Store(it.seq)
	}
}
