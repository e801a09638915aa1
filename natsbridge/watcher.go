package natsbridge

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/heraldgo/herald/broadcast"
)

// item is a value with the stream sequence it was stored at; prefix values
// given to Watch have sequence 0. A durable watcher's values carry their
// message, to acknowledge them once read; a value whose message carried a
// trace context carries the message's headers (see traceHeaders), nil
// otherwise.
type item[T any] struct {
	seq  uint64
	v    T
	mark *readMark
	h    nats.Header
}

// Watcher receives the values of a topic stored from its start sequence on,
// in stream order, through a policy of its own when its queue is full. It
// reads like a broadcast.Watcher (All, Events, Next, Stop, Dropped,
// Delivered) and adds where it stands in the stream (Start, Seq, Gaps)
// and the trace context of the last value read (Context).
//
// Behind it are one consumer on the server and a private
// broadcast.Broadcaster with this one watcher, so the policies are
// broadcast's own: under Block a full queue stops the feed, which stops
// asking the server for messages; under DropNewest or DropOldest the feed
// keeps reading and the queue drops, counting each drop.
//
// A Watcher is safe for concurrent use; Seq is exact when one goroutine
// reads a queue watcher (see Seq). Its zero value is not usable: get one from Topic.Watch and call
// Stop when done with it.
type Watcher[T any] struct {
	t     *Topic[T]
	f     *feed[T]
	b     *broadcast.Broadcaster[item[T]]
	w     *broadcast.Watcher[item[T]]
	start uint64
	seq   atomic.Uint64
	// trace holds the headers of the last value read (a nats.Header),
	// nil if it carried no trace context; it is stored only when that
	// changes or a value carries one (see read).
	trace atomic.Value

	stopOnce   sync.Once
	finishOnce sync.Once // saves a durable position and hands it over

	// The read mode, chosen by the first read (readPull, readChannel),
	// and the Events channel and its pump. Once stopped is set, no pump
	// starts: Events returns a closed channel.
	mode     atomic.Int32
	evMu     sync.Mutex // guards stopped, events, evCancel, evDone
	stopped  bool
	events   chan T
	evCancel context.CancelFunc
	evDone   chan struct{} // closed when the pump has exited

	// A value the pump took from the queue but could not hand over before
	// Stop: Next and All read it before the queue.
	heldMu sync.Mutex // guards held
	held   []item[T]
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
// Shutdown has begun, and an error for an invalid o. ctx bounds the calls to
// the server Watch makes; Watch panics on a nil ctx. A Watch that fails once
// it has created its consumer deletes it (the server drops it by itself after
// a few minutes if it cannot be reached).
//
// Watch starts two goroutines: the feed, which reads the stream until Stop
// (or until the stream is deleted; see Err), and the distributor of the
// watcher's private broadcaster, which ends with Stop. Events starts a
// third.
func (t *Topic[T]) Watch(ctx context.Context, o WatchOptions, prefix ...T) (*Watcher[T], error) {
	mustContext(ctx)
	if err := checkWatchOptions(o); err != nil {
		return nil, err
	}
	if t.isClosed() {
		return nil, t.shutErr
	}
	start, d, err := t.watchStart(ctx, o)
	if err != nil {
		return nil, err
	}
	w, err := t.newWatcher(start, o, prefix)
	if err != nil {
		return nil, err
	}
	w.f = newFeed(t, "watcher", start)
	w.f.durable = d
	w.f.out = func(ctx context.Context, seq uint64, v T, mark *readMark, h nats.Header) error {
		return w.b.Publish(ctx, item[T]{seq: seq, v: v, mark: mark, h: h})
	}
	w.f.end = func(ctx context.Context, _ error) {
		// The stream is gone: the watcher has ended (before its reader
		// can see it close). Close it once its reader has taken what is
		// queued, or once Stop is called.
		t.retire(w)
		_ = w.b.Shutdown(ctx)
	}
	err = w.f.open(ctx)
	if err == nil {
		err = w.f.launch(func() error { return t.adopt(w) })
	}
	if err != nil {
		w.w.Stop()
		_ = w.b.Shutdown(context.Background())
		return nil, err
	}
	return w, nil
}

// watchStart returns the start sequence of a watcher made with o, and for
// a durable one the feed's durable state, bound to its position.
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
	d := &durable{name: o.Durable, takeover: o.Takeover}
	if d.takeover == 0 {
		d.takeover = DefaultTakeover
	}
	if _, start, err = t.bindDurable(ctx, o, d.takeover); err != nil {
		return 0, nil, err
	}
	return start, d, nil
}

// newWatcher returns a watcher at start, its private broadcaster made
// with o's queue and policy and its queue holding prefix; the caller
// gives it its feed.
func (t *Topic[T]) newWatcher(start uint64, o WatchOptions, prefix []T) (*Watcher[T], error) {
	w := &Watcher[T]{t: t, start: start}
	w.seq.Store(start - 1)
	w.b = broadcast.New[item[T]](broadcast.Options{QueueLength: o.QueueLength, Full: o.Full}) // zero Full: Block
	pre := make([]item[T], len(prefix))
	for i, v := range prefix {
		pre[i] = item[T]{v: v}
	}
	var err error
	w.w, err = w.b.WatchWith(broadcast.WatchOptions{}, pre...)
	if err != nil { // cannot happen: b is new
		_ = w.b.Shutdown(context.Background())
		return nil, err
	}
	return w, nil
}

func (w *Watcher[T]) shutdown(ctx context.Context) error { return w.stop(ctx) }

// Stop ends the watcher: it stops reading the stream, deletes its consumer
// and closes its queue, whose values stay readable with Next and All. It
// never waits for a value to be read, and returns once the watcher's
// goroutines have exited. See the package doc, "Shutdown".
func (w *Watcher[T]) Stop() { _ = w.stop(context.Background()) }

// stop is Stop; if ctx ends first it gives up deleting the consumer, and
// returns ctx.Err() once the goroutines have exited.
func (w *Watcher[T]) stop(ctx context.Context) error {
	w.stopOnce.Do(func() {
		w.f.stop()
		w.evMu.Lock()
		w.stopped = true
		cancel := w.evCancel
		w.evMu.Unlock()
		if cancel != nil {
			cancel()
		}
	})
	<-w.f.quiet // the feed hands out nothing more (it stopped reading)
	// No pump starts once stopped is set, so evDone is final.
	w.evMu.Lock()
	evDone := w.evDone
	w.evMu.Unlock()
	if evDone != nil {
		<-evDone
	}
	w.closeQueue()
	err := w.f.halt(ctx) // the deletion of the consumer
	if w.f.durable != nil {
		// Once, for a Stop and a Topic.Shutdown that run together: the
		// second waits for the first.
		w.finishOnce.Do(func() {
			dctx, cancel := context.WithTimeout(ctx, deleteTimeout)
			w.f.finishDurable(dctx)
			cancel()
		})
	}
	w.t.forget(w)
	return err
}

// closeQueue shuts the private broadcaster down without waiting for the
// reader: the values the feed handed it that fit in the watcher's queue
// are placed there (and stay readable), and those that do not are counted
// in Dropped, with a log line. The feed has stopped.
func (w *Watcher[T]) closeQueue() {
	before := w.w.Dropped()
	now, cancel := context.WithCancel(context.Background())
	cancel()
	_ = w.b.Shutdown(now) // ErrClosed again on a later call: nothing to report
	if cut := w.w.Dropped() - before; cut > 0 {
		next := "a watcher resumed from Seq()+1 reads them"
		if w.f.durable != nil {
			next = "the durable position's next reader reads them"
		}
		w.f.log.Warn("natsbridge: values read from the stream but not queued when the watcher stopped ("+next+")",
			slog.Uint64("values", cut), slog.Uint64("seq", w.Seq()))
	}
}

// isStopped reports whether Stop has been called.
func (w *Watcher[T]) isStopped() bool {
	w.evMu.Lock()
	defer w.evMu.Unlock()
	return w.stopped
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
	if err := w.b.Flush(ctx); err != nil {
		if w.isStopped() || w.f.failure() != nil {
			return w.f.endErr()
		}
		return err
	}
	if w.isStopped() || w.f.failure() != nil {
		// What Flush waited for may never have been queued.
		return w.f.endErr()
	}
	return nil
}

// Start returns the stream sequence of the first value the watcher is
// owed. It is fixed when Watch returns.
func (w *Watcher[T]) Start() uint64 { return w.start }

// Seq returns the stream sequence of the last value read from the watcher
// (through All, Next or Events), or Start()-1 if none was. A watcher made
// again with WatchOptions{From: Seq()+1} resumes where this one was. On a
// queue watcher (All or Next read first) it is exact as soon as a read
// returns; on a channel watcher (Events first) the goroutine that sends
// on the channel records it just after each receive, so it may lag the
// value just received, never run ahead of it; it is exact once Stop has
// returned.
func (w *Watcher[T]) Seq() uint64 { return w.seq.Load() }

// Context returns parent with the trace context of the last value read
// from the watcher (through All, Next or Events): the span context of the
// Publish call that sent it, as a remote span context, extracted from the
// value's message with OpenTelemetry's global propagator. It returns
// parent itself if that value carried none (or was a prefix value), or if
// none was read. Like Seq, it is exact when one goroutine reads with All
// or Next; on a channel watcher it is recorded just after each receive,
// before Seq: once Seq gives a value's sequence, Context gives its trace
// context. A durable watcher's value that comes again carries its trace
// context again. It panics on a nil parent. See the package doc,
// "Tracing".
func (w *Watcher[T]) Context(parent context.Context) context.Context {
	mustContext(parent)
	h, _ := w.trace.Load().(nats.Header)
	if h == nil {
		return parent
	}
	return extractTrace(parent, h)
}

// Gaps returns how many values owed to the watcher the stream no longer
// held when the watcher came to read them: removed by the stream's
// retention limits (or deleted) first. Each is counted exactly once: when
// the watcher reads a later value, or, for values removed from the end of
// the stream, when Flush is called.
func (w *Watcher[T]) Gaps() uint64 { return w.f.gaps.Load() }

// Dropped returns how many values owed to the watcher were dropped: by its
// policy (DropNewest, DropOldest), as broadcast.Watcher.Dropped, or read
// from the stream but not yet in its queue when Stop came (those are
// logged; a watcher resumed from Seq()+1 reads them).
func (w *Watcher[T]) Dropped() uint64 { return w.w.Dropped() }

// Delivered returns how many values were placed in the watcher's queue (a
// prefix is not counted), as broadcast.Watcher.Delivered.
func (w *Watcher[T]) Delivered() uint64 { return w.w.Delivered() }

// Redelivered returns how many values a durable watcher received that the
// server had delivered before, to a reader that did not acknowledge them:
// a reader that crashed or was killed (it may have read them, or only
// fetched them ahead), or one whose application read them after its Stop
// began. Seq identifies each. It is zero for a watcher that is not
// durable.
func (w *Watcher[T]) Redelivered() uint64 {
	if w.f.durable == nil {
		return 0
	}
	return w.f.durable.redelivered.Load()
}

// Poisoned returns how many messages the codec could not decode. Each was
// skipped and counted, and logged with the others of its burst (see
// TopicOptions.Logger); the watcher went on with the next.
func (w *Watcher[T]) Poisoned() uint64 { return w.f.poisoned.Load() }

// Restarts returns how many times the watcher's consumer was lost and
// created again where it stopped (nothing is lost or repeated by that). A
// consumer lost for good (the connection closed, the stream deleted: see
// Err) is not counted.
func (w *Watcher[T]) Restarts() uint64 { return w.f.restarts.Load() }

// Err returns why the watcher ended by itself: an error wrapping
// ErrStreamGone if the stream was deleted, or the connection's error if it
// was closed. It returns nil while the watcher runs, and after a Stop that
// came first; once set, it stays set, also after Stop.
func (w *Watcher[T]) Err() error { return w.f.failure() }
