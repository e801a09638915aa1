package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge/internal/queue"
)

// item is a value read from the stream on its way to the application: its
// stream sequence (0 for a prefix value), the value or, for a poison
// message, the codec's error; for a durable watcher its message and the
// epoch it came in, to acknowledge it; its message's headers if they carry a trace context
// (see traceHeaders), nil otherwise.
type item[T any] struct {
	seq   uint64
	v     T
	err   error
	msg   jetstream.Msg
	epoch uint64 // a durable consumer's epoch (see acks.epoch) when msg came
	count int    // how many times the server delivered it, this time included
	turn  uint64 // a durable watcher's turn when it was handed out (see acks.turn)
	h     nats.Header
}

// Watcher receives the values of a topic stored from its start sequence
// on, in stream order, through a queue of its own with a policy for when
// it is full (WatchOptions.Full). It is read with All or Next, or, made
// with WatchOptions.Read set to broadcast.ReadChannel, with Events; Stats,
// Start, Seq and Context say where it stands.
//
// Behind it is one consumer on the server and one goroutine, the feed,
// which reads the consumer and places values in the watcher's queue: under
// Block a full queue stops the feed, which stops asking the server for
// messages; under DropNewest or DropOldest the feed keeps reading and the
// queue drops, counting each drop. A durable watcher (WatchOptions.Durable)
// has a second goroutine, its keeper (see Durable watchers in the package
// doc).
//
// A Watcher is safe for concurrent use; Seq is exact when one goroutine
// reads it. Its zero value is not usable: get one from Topic.Watch and
// call Stop (or Shutdown) when done with it.
type Watcher[T any] struct {
	t      *Topic[T]
	f      *feed[T]
	start  uint64
	prefix uint64 // the length of the prefix
	full   broadcast.FullPolicy
	// One of q and ch is the watcher's queue: q for a queue watcher, ch
	// for a channel watcher, whose only sender is the feed goroutine. A
	// queue counts what it delivered; delivered counts a channel's.
	q    *queue.Queue[item[T]]
	held held[T] // a durable reader's value taken and not handed out
	ch   chan T
	// A channel watcher's count of values sent on ch, and how many of the
	// first ones are prefix values, which DropOldest never drops: owned by
	// the feed goroutine.
	chSent, chPinned uint64
	d                *durable           // nil unless durable
	dead             *Topic[DeadLetter] // WatchOptions.DeadLetters
	notify           chan struct{}      // signalled on each value queued, if not nil
	deadID           string             // see deadLetterID

	seq atomic.Uint64
	// trace holds the headers of the last value read (a nats.Header),
	// nil if it carried no trace context; it is stored only when that
	// changes or a value carries one (see read).
	trace atomic.Value

	delivered  atomic.Uint64
	dropped    atomic.Uint64
	handedBack atomic.Uint64

	stopOnce  sync.Once
	closeOnce sync.Once // closes ch
	stopped   atomic.Bool
	// halted is closed once Stop has stopped the feed and closed the
	// queue.
	halted chan struct{}
	err    error // what halting the feed returned; set before halted closes
}

// Watch registers a remote watcher configured by o (see WatchOptions), whose
// queue first holds the values of prefix, if any. When Watch returns, the
// watcher's start sequence is fixed: it receives every value the stream
// stores at that sequence or later (under Block, while the stream retains
// them), in order, and nothing stored before it. With o.From zero, every
// value stored after Watch returns is at or after the start, and no value
// stored before Watch was called is.
//
// Watch returns ErrBadStart for an o.From beyond the stream's end,
// ErrStreamGone if the stream was deleted, ErrClosed after the topic's
// Shutdown has begun, and an error for an invalid o. ctx bounds the calls
// to the server Watch makes; one the server leaves unanswered (a node
// that died, a connection cut) is made again after 5 s, as long as ctx
// lasts (three attempts in all for a ctx without a deadline). Watch
// panics on a nil ctx. A Watch that fails once it has created its
// consumer, or may have, deletes it without waiting past ctx (the server
// drops it by itself after a few minutes if it cannot be reached, or if
// the request that creates it lands after Watch gave up).
//
// Watch starts one goroutine, the feed, which reads the stream until Stop
// (or until the stream is deleted; see Err); a durable watcher's keeper is
// a second, which ends with the watcher's hand-over (see Stop).
func (t *Topic[T]) Watch(ctx context.Context, o WatchOptions, prefix ...T) (*Watcher[T], error) {
	mustContext(ctx)
	return t.watch(ctx, o, prefix, nil)
}

// watch is Watch; notify, if not nil, is signalled whenever the watcher's
// queue takes a value (a group member's, which reads several).
func (t *Topic[T]) watch(ctx context.Context, o WatchOptions, prefix []T, notify chan struct{}) (*Watcher[T], error) {
	if err := checkWatchOptions(o); err != nil {
		return nil, err
	}
	if t.isClosed() {
		return nil, t.shutErr
	}
	var start uint64
	var d *durable
	err := answered(ctx, func(ctx context.Context) (err error) {
		start, d, err = t.watchStart(ctx, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	w := t.newWatcher(start, o, prefix, d)
	w.notify = notify
	w.f = newFeed(t, "watcher", start, w, d)
	if d != nil {
		d.keep.notify = notify
		d.keep.start()
	}
	name := consumerName()
	err = answered(ctx, func(ctx context.Context) error { return w.f.open(ctx, name) })
	if err == nil {
		err = w.f.launch(func() error { return t.adopt(w) })
	}
	if err != nil {
		if d != nil {
			d.keep.stop()
		}
		return nil, err
	}
	return w, nil
}

// watchStart returns the start sequence of a watcher made with o, and for
// a durable one its durable state, bound to its position.
func (t *Topic[T]) watchStart(ctx context.Context, o WatchOptions) (uint64, *durable, error) {
	info, err := t.streamState(ctx)
	if err != nil {
		return 0, nil, err
	}
	next := info.State.LastSeq + 1
	start := o.From
	switch {
	case start == 0:
		start = next
	case start > next:
		return 0, nil, fmt.Errorf("%w: From %d, but the stream's next value will be %d: pass 0 for what follows, or a sequence the stream has used (Seq()+1 of a watcher)", ErrBadStart, start, next)
	}
	if o.Durable == "" {
		return start, nil, nil
	}
	return t.bindDurable(ctx, o)
}

// newWatcher returns a watcher at start, its queue made with o's length,
// policy and read mode and holding prefix; the caller gives it its feed.
func (t *Topic[T]) newWatcher(start uint64, o WatchOptions, prefix []T, d *durable) *Watcher[T] {
	w := &Watcher[T]{t: t, start: start, prefix: uint64(len(prefix)), full: o.Full, d: d, dead: o.DeadLetters, deadID: deadLetterID(o), halted: make(chan struct{})}
	if w.full == 0 {
		w.full = broadcast.Block
	}
	qlen := o.QueueLength
	if qlen == 0 {
		qlen = broadcast.DefaultQueueLength
	}
	w.seq.Store(start - 1)
	if o.Read == broadcast.ReadChannel {
		w.ch = make(chan T, qlen+len(prefix))
		for _, v := range prefix {
			w.ch <- v
		}
		w.chSent, w.chPinned = uint64(len(prefix)), uint64(len(prefix))
		return w
	}
	pinned := make([]item[T], len(prefix))
	for i, v := range prefix {
		pinned[i] = item[T]{v: v}
	}
	w.q = queue.New(qlen, queuePolicy(w.full), pinned)
	return w
}

// ended is called by the feed goroutine when the feed ends on its own (the
// stream is gone): the watcher's readers take what is queued, then see it
// closed.
func (w *Watcher[T]) ended(context.Context, error) {
	w.t.retire(w)
	if w.q != nil {
		w.q.Close()
	} else {
		w.closeCh() // the feed goroutine, its only sender, sends no more
	}
}

// closeCh closes a channel watcher's channel, once: the feed goroutine
// has sent its last value.
func (w *Watcher[T]) closeCh() { w.closeOnce.Do(func() { close(w.ch) }) }

// done and exited complete the feed's destination (see dest).
func (w *Watcher[T]) done() <-chan struct{} { return nil }
func (w *Watcher[T]) exited()               {}

// discard gives back to the server, uncounted by the application, what
// the watcher's queue holds, and returns the lowest sequence among it (0
// if it held nothing): a durable watcher whose position another reader
// held meanwhile, or that was fenced, reads again.
func (w *Watcher[T]) discard() uint64 {
	var first uint64
	if w.d != nil {
		first = w.held.discard(&w.handedBack)
	}
	if w.q != nil {
		its := w.q.Drain(nil)
		w.handedBack.Add(uint64(len(its)))
		for _, it := range its {
			if it.seq != 0 && (first == 0 || it.seq < first) {
				first = it.seq
			}
		}
	}
	return first
}

func (w *Watcher[T]) shutdown(ctx context.Context) error { return w.Shutdown(ctx) }

// Stop ends the watcher: it stops reading the stream and deletes its
// consumer, and returns once its feed has exited. It is idempotent and
// safe to call from any goroutine, also from the one that reads the
// watcher (inside an All loop's body too).
//
// A queue watcher's values still queued stay readable with All and Next,
// which then end; a channel watcher's channel is closed, its values still
// readable. A durable watcher instead hands back what it holds: nothing
// more reaches its application, and the next reader of its position reads
// on from the first value this one's application was not done with. Stop
// acknowledges the values that are done and hands the position over
// before it returns, unless a value is still outstanding (its handler
// running: see Done); the hand-over then happens when the last one is
// done, or after the position's takeover time (the values not done by then
// come again to the next reader). Shutdown waits for the hand-over.
func (w *Watcher[T]) Stop() { w.halt(context.Background()) }

// Shutdown is Stop, then, for a durable watcher, it waits until the values
// handed out are done and the position is handed over, bounded by ctx: if
// ctx ends first, the position is handed over at once (the values not done
// come again to the next reader, counted) and Shutdown returns ctx.Err().
// Do not call it from inside an All loop body, or between a Next and the
// end of its value's handling: it would wait for that handling; call Stop
// there. It panics on a nil ctx.
func (w *Watcher[T]) Shutdown(ctx context.Context) error {
	mustContext(ctx)
	end, cancel := endCtx(ctx)
	defer cancel()
	return w.shutdownWithin(ctx, end)
}

// shutdownWithin is Shutdown, its server calls bounded by end (see
// endCtx).
func (w *Watcher[T]) shutdownWithin(ctx, end context.Context) error {
	err := w.halt(end)
	if w.d != nil {
		select {
		case <-w.d.finished:
		case <-ctx.Done():
			w.finishWithin(end)
		}
	}
	if ctx.Err() != nil && (err == nil || errors.Is(err, context.Canceled)) {
		err = ctx.Err() // end's grace ran out after ctx: ctx's error
	}
	return err
}

// halt is Stop, bounded by ctx; it returns what halting the feed returned.
func (w *Watcher[T]) halt(ctx context.Context) error {
	w.stopOnce.Do(func() {
		w.stopped.Store(true)
		w.f.stop()
		<-w.f.quiet // the feed places nothing more
		if w.d != nil {
			w.d.keep.closeReads()
			w.discard()
			w.held.stop(&w.handedBack) // a reader's value given back after this is counted
		}
		if w.q != nil {
			w.q.Close()
		}
		w.err = w.f.halt(ctx) // the deletion of the consumer
		if w.ch != nil {
			w.closeCh() // the feed goroutine, its only sender, has exited
		}
		close(w.halted)
		if w.d == nil {
			w.t.forget(w)
		} else {
			// Until its hand-over, which Topic.Shutdown waits for (see
			// finish), the topic keeps it, no longer live.
			w.t.retire(w)
			w.d.afterStop(ctx, w, w.f.log)
		}
	})
	<-w.halted
	return w.err
}

// Flush returns once every value the stream held when Flush was called is
// in the watcher's queue, or was dropped by its policy, or counted as a gap
// or a poison message. Values removed from the end of the stream before
// the watcher read them are counted as gaps by then, also those removed
// while Flush waits (a purge, MaxAge): Flush looks at the stream again
// every TopicOptions.Heartbeat while it waits. Under Block it waits
// for the reader to make room. A durable watcher that stands by receives
// nothing: its Flush waits until it is the active reader. It returns
// ctx.Err() if ctx ends first, and ErrClosed (or Err) if the watcher was
// stopped, or ended, before Flush returned. It panics on a nil ctx.
func (w *Watcher[T]) Flush(ctx context.Context) error {
	mustContext(ctx)
	if err := w.f.catchUp(ctx); err != nil {
		return err
	}
	if w.stopped.Load() || w.f.failure() != nil {
		// What Flush waited for may never have been queued.
		return w.f.endErr()
	}
	return nil
}

// Start returns the stream sequence of the first value the watcher is
// owed. It is fixed when Watch returns.
func (w *Watcher[T]) Start() uint64 { return w.start }

// Seq returns the stream sequence of the last value read from the watcher
// (through All or Next), or Start()-1 if none was. A watcher made again
// with WatchOptions{From: Seq()+1} resumes where this one was. It is exact
// as soon as a read returns when one goroutine reads. On a channel watcher
// it is the sequence of the last value placed on the channel, which may
// run ahead of what was received by the values the channel holds.
func (w *Watcher[T]) Seq() uint64 { return w.seq.Load() }

// Context returns parent with the trace context of the last value read
// from the watcher (through All or Next): the span context of the Publish
// call that sent it, as a remote span context, extracted from the value's
// message with OpenTelemetry's global propagator. It returns parent itself
// if that value carried none (or was a prefix value), or if none was read.
// Like Seq, it is exact when one goroutine reads with All or Next; on a
// channel watcher it is that of the last value placed on the channel. A
// durable watcher's value that comes again carries its trace context
// again. Values published with TryPublish or through Forward carry none.
// It panics on a nil parent.
func (w *Watcher[T]) Context(parent context.Context) context.Context {
	mustContext(parent)
	h, _ := w.trace.Load().(nats.Header)
	if h == nil {
		return parent
	}
	return extractTrace(parent, h)
}

// Err returns why the watcher ended by itself: an error wrapping
// ErrStreamGone if the stream was deleted, ErrDurableGone if its durable
// position was, or the connection's error if it was closed. It returns nil
// while the watcher runs, and after a Stop that came first; once set, it
// stays set, also after Stop.
func (w *Watcher[T]) Err() error { return w.f.failure() }

// errOf maps what the queue returns to what a read returns.
func (w *Watcher[T]) errOf(err error) error {
	if errors.Is(err, queue.ErrClosed) {
		return ErrClosed
	}
	return err
}
