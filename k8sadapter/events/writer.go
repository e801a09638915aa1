package events

import (
	"context"
	"hash/maphash"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/heraldgo/herald/internal/hashlru"
	"github.com/heraldgo/herald/k8sadapter/internal/pipeline"
)

// writer writes to the sink. Its queue, a Fold, exists from
// NewBroadcaster on; its goroutine runs while recording
// (StartRecordingToSinkWithContext, until that context ends or the
// broadcaster shuts down). Everything in it below abort belongs to that
// goroutine, the series cache included, so no lock guards them.
type writer struct {
	e       *EventBroadcaster
	q       *pipeline.Fold[*eventsv1.Event, key, folded]
	c       *pipeline.Consumer[*eventsv1.Event, writerCounts]
	w       *pipeline.Writer[*eventsv1.Event]
	attempt pipeline.Attempt[*eventsv1.Event] // wr.write, bound once
	abort   context.Context                   // done once a shutdown's deadline passed

	// ctx is what the sink calls take: the recording context (or, at
	// Shutdown's drain, the shutdown's), ended as well once the deadline
	// passes, so that a sink call that heeds it returns then.
	ctx  context.Context
	seed maphash.Seed
	// cache holds the series by key, hashed once per entry taken from
	// the queue: struct keys of some twenty strings are not hashed again
	// by each cache operation.
	cache  *hashlru.Cache[key, entry]
	counts writerCounts
	// flushed is set once the writer has written the open series' final
	// counts at shutdown (see flush).
	flushed bool
}

// newWriter returns the writer of e, its queue registered with e's
// pipeline. The queue holds WithQueueLength series waiting, and never
// fewer than the writer remembers (WithCacheSize).
func newWriter(e *EventBroadcaster) *writer {
	wr := &writer{
		e:     e,
		w:     e.p.NewWriter(e.cfg.MaxTries, e.cfg.clock),
		abort: e.p.Aborting(),
		seed:  maphash.MakeSeed(),
		cache: hashlru.New[key, entry](e.cfg.cacheSize),
	}
	wr.q = e.p.NewFold(max(e.cfg.QueueLength, e.cfg.cacheSize))
	c, err := e.p.WatchSink(wr.q, "sink")
	if err != nil {
		panic("events: " + err.Error()) // a new pipeline is not shut down
	}
	wr.c = c
	wr.attempt = wr.write
	return wr
}

// aborted reports whether a shutdown's deadline has passed: no sink call
// starts after it.
func (wr *writer) aborted() bool { return wr.abort.Err() != nil }

// untilAbort returns a context that ends with ctx, or once a shutdown's
// deadline passes, and the function that releases it. No goroutine waits
// for either: context.AfterFunc starts one only once the deadline passed.
func (wr *writer) untilAbort(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(wr.abort, cancel)
	return ctx, func() { stop(); cancel() }
}

// run returns the body of the writer's goroutine for one recording: it
// takes the queue's entries, in the order of their first event, until the
// broadcaster shuts down (then it writes every open series' final count)
// or ctx ends (then what is queued waits for the next recording, or for
// Shutdown to abandon it). The finish and refresh passes run on this
// goroutine too, on timers of the broadcaster's clock.
func (wr *writer) run(ctx context.Context, logger klog.Logger) func(*pipeline.Consumer[*eventsv1.Event, writerCounts]) {
	return func(c *pipeline.Consumer[*eventsv1.Event, writerCounts]) {
		sinkCtx, release := wr.untilAbort(ctx)
		defer release()
		wr.ctx, wr.w.Logger = sinkCtx, logger
		wr.w.Progress = func() { c.Publish(&wr.counts) }
		wr.loop(ctx, c)
	}
}

// loop is run's loop, until ctx ends or the queue is closed and empty.
func (wr *writer) loop(ctx context.Context, c *pipeline.Consumer[*eventsv1.Event, writerCounts]) {
	clk := wr.e.cfg.clock
	finish, refresh := clk.NewTimer(FinishTime), clk.NewTimer(RefreshTime)
	defer finish.Stop()
	defer refresh.Stop()
	// pass runs a periodic pass and sets its timer again.
	pass := func(run func(), t clock.Timer, d time.Duration) {
		if wr.aborted() { // no sink call once the deadline passed
			return
		}
		run()
		c.Publish(&wr.counts)
		t.Reset(d)
	}
	for ctx.Err() == nil { // an ended context wins over a queued event
		select { // a flood of events does not hold the passes back
		case <-finish.C():
			pass(wr.finish, finish, FinishTime)
			continue
		case <-refresh.C():
			pass(wr.refresh, refresh, RefreshTime)
			continue
		default:
		}
		w, closed := wr.q.Take()
		if w != nil {
			wr.handle(w)
			c.Reach(wr.q.Done(w), &wr.counts)
			continue
		}
		if closed {
			wr.flush(wr.abort)
			return
		}
		select {
		case <-wr.q.Ready():
		case <-finish.C():
			pass(wr.finish, finish, FinishTime)
		case <-refresh.C():
			pass(wr.refresh, refresh, RefreshTime)
		case <-ctx.Done():
		}
	}
	// What is queued waits for the next recording, or for Shutdown to
	// abandon it.
}

// drain is what Shutdown leaves to the writer once no goroutine of its
// runs (see Consumer.Drain): what is left in the queue is abandoned, and,
// if the recording ended before the shutdown (its context ended), the
// open series get their final count, bounded by the shutdown's ctx.
func (wr *writer) drain(ctx context.Context) {
	wr.abandon()
	ctx, release := wr.untilAbort(ctx)
	defer release()
	wr.ctx = ctx // the recording context has ended: sink calls take this one
	wr.flush(ctx)
}

// abandon counts, and logs, the events no writer will take: what is left
// in the queue at Shutdown when the writer is not recording.
func (wr *writer) abandon() {
	var n uint64
	for {
		w, _ := wr.q.Take()
		if w == nil {
			break
		}
		n += uint64(w.Events)
		wr.counts.Abandoned += uint64(w.Events)
		wr.c.Reach(wr.q.Done(w), &wr.counts)
	}
	if n > 0 {
		wr.w.Logger.Error(nil, "Shutdown found the writer not recording: abandoning the events waiting for it", "abandoned", n)
	}
}
