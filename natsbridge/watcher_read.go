package natsbridge

import (
	"context"
	"iter"

	"github.com/nats-io/nats.go"
)

// Reading a Watcher: All, Next and Events take values from its queue, and
// each value handed to the reader moves Seq (and, for a durable watcher,
// what is acknowledged). The first read chooses the read mode, as
// broadcast's watchers do: Events first makes a channel watcher, whose
// pump moves values from the queue to the channel, and on which All and
// Next read the channel too (then, once the pump has ended, the value it
// held and the rest of the queue); All or Next first makes a queue
// watcher, on which Events panics.

// The read modes.
const (
	readUnchosen int32 = iota
	readPull
	readChannel
)

// All returns an iterator over the watcher's values, as
// broadcast.Watcher.All: it takes what is queued in one step and ends once
// the watcher is stopped (or its stream deleted) and every queued value has
// been read. On a channel watcher (Events called first) it reads the
// Events channel.
func (w *Watcher[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		if w.choosePull() == readChannel {
			for v := range w.events {
				if !yield(v) {
					return
				}
			}
			if it, ok := w.takeHeld(); ok {
				w.read(it)
				if !yield(it.v) {
					return
				}
			}
		}
		for it := range w.w.All() {
			w.read(it)
			if !yield(it.v) {
				return
			}
		}
	}
}

// Next returns the watcher's next value, waiting for one if none is queued.
// It returns ctx.Err() if ctx ends first, and ErrClosed once the watcher is
// stopped (or its stream deleted: see Err) and every queued value has been
// read. On a channel watcher (Events called first) it reads the Events
// channel. It panics on a nil ctx.
func (w *Watcher[T]) Next(ctx context.Context) (T, error) {
	mustContext(ctx)
	if w.choosePull() == readChannel {
		select {
		case v, ok := <-w.events:
			if ok {
				return v, nil
			}
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
		if it, ok := w.takeHeld(); ok {
			w.read(it)
			return it.v, nil
		}
	}
	it, err := w.w.Next(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	w.read(it)
	return it.v, nil
}

// choosePull makes the watcher a queue watcher unless its mode is chosen,
// and returns its mode.
func (w *Watcher[T]) choosePull() int32 {
	if m := w.mode.Load(); m != readUnchosen {
		return m
	}
	w.mode.CompareAndSwap(readUnchosen, readPull)
	return w.mode.Load()
}

// Events returns a channel on which the watcher's values arrive, for
// select statements. Called before Next and All, it makes the watcher a
// channel watcher; called after one of them, it panics: a watcher's read
// mode is chosen by its first read. The first call starts a goroutine
// that moves values from the queue to the channel, one at a time: the
// channel has no buffer of its own, so that Seq counts what was received
// (it is recorded just after each receive, and is exact once Stop has
// returned). The channel is closed by Stop or once the stream is deleted
// and the queue drained; values still queued when Stop is called, the one
// the goroutine was offering first, stay readable with Next and All. All
// is faster where a loop will do.
func (w *Watcher[T]) Events() <-chan T {
	w.evMu.Lock()
	defer w.evMu.Unlock()
	if w.events != nil {
		return w.events
	}
	// The channel is in place before the mode says so: a reader that
	// sees readChannel sees the channel.
	w.events = make(chan T)
	if !w.mode.CompareAndSwap(readUnchosen, readChannel) {
		w.events = nil
		panic("natsbridge: Watcher.Events after Next or All: a watcher's read mode is chosen by its first read")
	}
	if w.stopped {
		close(w.events)
		return w.events
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.evCancel, w.evDone = cancel, make(chan struct{})
	go w.pump(ctx, w.events, w.evDone)
	return w.events
}

// pump is the Events goroutine, the only sender on ch. It ends when Stop
// ends ctx or the watcher closes. A value it holds when Stop comes is
// kept, before ch closes, for Next and All to read before the queue.
func (w *Watcher[T]) pump(ctx context.Context, ch chan<- T, done chan struct{}) {
	defer close(done)
	defer close(ch)
	for ctx.Err() == nil {
		it, err := w.w.Next(ctx)
		if err != nil {
			return
		}
		select {
		case ch <- it.v:
			w.read(it)
		case <-ctx.Done():
			w.putBack(it)
			return
		}
	}
}

// putBack keeps a value the pump could not hand over, for Next and All.
func (w *Watcher[T]) putBack(it item[T]) {
	w.heldMu.Lock()
	w.held = append(w.held, it)
	w.heldMu.Unlock()
}

// takeHeld returns the value put back by the pump, if any.
func (w *Watcher[T]) takeHeld() (item[T], bool) {
	w.heldMu.Lock()
	defer w.heldMu.Unlock()
	if len(w.held) == 0 {
		return item[T]{}, false
	}
	it := w.held[0]
	w.held = w.held[1:]
	return it, true
}

// read records that the value it was handed to the reader: its trace
// context, its sequence, and for a durable watcher the value to
// acknowledge. The trace context goes first, so that a Seq that gives the
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
	if it.mark != nil {
		w.f.durable.lastRead.Store(it.mark)
	}
}
