package pipeline

import (
	"context"
	"errors"
	"iter"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/internal/burst"
	"github.com/heraldgo/herald/internal/wait"
)

// ErrRunning is returned by Consumer.Go while the consumer's goroutine
// runs.
var ErrRunning = errors.New("pipeline: consumer already running")

// Tally is what one consumer, or a set of them, did with the events it was
// owed.
type Tally[C any] struct {
	// Counts are the consumer's own counters, as of its last Done.
	Counts C
	// Queued counts events owed to the consumer: placed in its queue, or
	// dropped because the queue was full.
	Queued uint64
	// Handled counts events its goroutine took from the queue and finished
	// with (Done).
	Handled uint64
	// Dropped counts events its full queue refused.
	Dropped uint64
	// A Fold's consumer: Folded counts events folded into a waiting
	// entry, and Abandoned those a shutdown past its deadline removed
	// from the queue unhandled (Fold.Abandon). Zero for a watcher's.
	Folded, Abandoned uint64
}

// Consumer is one queue of a pipeline and the goroutine that takes its
// events: a sink's writer (its queue a Fold) or an event handler (its
// queue a broadcast watcher). The goroutine owns its counters, a plain
// struct C, and publishes a copy with Done or Reach as it goes; Tally,
// Flush and Stats read the copies. A Consumer is safe for concurrent use.
type Consumer[E Event, C any] struct {
	h     *hub[E]
	q     queue                 // where its events wait
	w     *broadcast.Watcher[E] // q, for a watcher's consumer; nil for a Fold's
	stop  func()                // Stop
	what  string                // names the consumer in drop log lines
	drops burst.Burst
	// missedBase is the pipeline's count of events its broadcaster
	// refused when a watcher's consumer was registered: those refused
	// since, until it stopped (missedEnd), it missed.
	missedBase uint64
	// handled counts the events finished with; Flush waits on it. It is
	// ended while no goroutine takes the events, which releases every
	// Flush: nothing would reach their targets.
	handled wait.Counter

	mu        sync.Mutex // guards logger, counts, dropSeen, running, drain, ended and missedEnd, and orders handled with counts
	logger    klog.Logger
	counts    C
	dropSeen  uint64 // queue drops already given to the drop log
	running   bool   // a goroutine takes the events
	drain     func() // set by Drain: deals with what is left
	ended     bool   // a watcher's consumer stopped missing refused events
	missedEnd uint64
}

// queue is a consumer's queue as the consumer counts it: a
// broadcast.Watcher or a Fold.
type queue interface {
	// Delivered counts the events placed in the queue so far.
	Delivered() uint64
	// Dropped counts the events the queue refused.
	Dropped() uint64
}

// abandoner is a queue a shutdown past its deadline can empty at once:
// a Fold. A watcher's queue is the consumer goroutine's to empty (an All
// loop may hold a batch taken from it).
type abandoner interface {
	Folded() uint64
	Abandon() uint64
	Abandoned() uint64
}

// All returns a watcher consumer's events in order, as
// broadcast.Watcher.All.
func (c *Consumer[E, C]) All() iter.Seq[E] { return c.w.All() }

// Done records, on the goroutine of a watcher's consumer, that one more
// event was handled and that its counters now are *counts. It releases
// the Flush calls this event completes and logs the drops at a watcher's
// queue since the last call, one line per burst.
func (c *Consumer[E, C]) Done(counts *C) { c.publish(counts, 1, false) }

// Reach is Done for a Fold's consumer: the first handled events of its
// queue, in delivery order, are dealt with (Fold.Done returns that
// number).
func (c *Consumer[E, C]) Reach(handled uint64, counts *C) { c.publish(counts, handled, true) }

// Publish is Done for work no event was taken for (a periodic pass).
func (c *Consumer[E, C]) Publish(counts *C) { c.publish(counts, 0, false) }

// publish copies *counts and counts handled events: n more, or n in all
// if reach.
func (c *Consumer[E, C]) publish(counts *C, n uint64, reach bool) {
	c.mu.Lock()
	c.counts = *counts
	switch {
	case reach:
		c.handled.Advance(n)
	case n > 0:
		c.handled.Add(n)
	}
	fresh, logger := c.takeDropsLocked(), c.logger
	c.mu.Unlock()
	if fresh > 0 {
		if n, due := c.drops.Add(c.h.clock.Now(), fresh); due {
			c.logDrops(logger, n)
		}
	}
}

// Stop ends the consumer's queue at the current position: every event
// published before the call is still placed in its queue and handled;
// none published after Stop returns is. It is idempotent.
func (c *Consumer[E, C]) Stop() { c.stop() }

// stopWatcher is Stop for a watcher's consumer.
func (c *Consumer[E, C]) stopWatcher() {
	// The broadcaster's Stop takes effect when its distributor gets to it,
	// not at a queue position: events published before it but not yet
	// distributed would be skipped. Its Flush is a queue position. With
	// DropNewest watchers only, the distributor never waits for one, so
	// this returns as soon as it has caught up.
	_ = c.h.b.Flush(context.Background())
	c.w.Stop()
	c.mu.Lock()
	c.endMissedLocked()
	c.mu.Unlock()
}

// endMissedLocked stops counting the events the broadcaster refuses as
// missed by this consumer, if it is a watcher's.
func (c *Consumer[E, C]) endMissedLocked() {
	if c.w != nil && !c.ended {
		c.ended, c.missedEnd = true, c.h.refused.Load()
	}
}

// missedLocked returns the events the broadcaster refused while this
// watcher's consumer was registered: it is owed them, and dropped them.
func (c *Consumer[E, C]) missedLocked() uint64 {
	if c.w == nil {
		return 0
	}
	end := c.h.refused.Load()
	if c.ended {
		end = c.missedEnd
	}
	return end - c.missedBase
}

// Tally returns a snapshot of what the consumer did. A watcher's
// consumer counts as dropped, besides what its own queue dropped, the
// events the broadcaster's incoming queue refused while it was
// registered: none of the watchers got those.
func (c *Consumer[E, C]) Tally() Tally[C] {
	c.mu.Lock()
	t := Tally[C]{Counts: c.counts, Handled: c.handled.Load()}
	missed := c.missedLocked()
	c.mu.Unlock()
	// Read after handled, so that Queued >= Handled + Dropped.
	if f, ok := c.q.(abandoner); ok {
		t.Folded, t.Abandoned = f.Folded(), f.Abandoned()
	}
	t.Dropped = c.q.Dropped() + missed
	t.Queued = c.q.Delivered() + t.Dropped
	return t
}

// abandonQueued empties a Fold's queue for a shutdown past its deadline
// (see Fold.Abandon), and returns how many events it abandoned; a
// watcher's consumer abandons its events on its own goroutine.
func (c *Consumer[E, C]) abandonQueued() uint64 {
	if f, ok := c.q.(abandoner); ok {
		return f.Abandon()
	}
	return 0
}

// await returns once the consumer has handled every event its queue
// holds now, or at once if no goroutine takes its events; ctx.Err() if ctx
// ends first. It is called after the broadcaster's Flush, when a
// watcher's Delivered counts every event published before the Flush that
// the watcher did not drop (a DropNewest watcher's drops never enter its
// queue); a Fold's counts them as soon as Publish has returned.
func (c *Consumer[E, C]) await(ctx context.Context) error {
	if err := c.handled.Wait(ctx, c.q.Delivered()); err != wait.ErrEnded {
		return err
	}
	return nil
}

// Go starts the consumer's goroutine, which runs run and logs with
// logger; run takes events and calls Done after each. It returns
// ErrRunning if the goroutine runs already, and broadcast.ErrClosed once
// the shutdown has begun. A consumer whose goroutine returned may be
// started again: its queue kept what arrived meanwhile.
func (c *Consumer[E, C]) Go(logger klog.Logger, run func(*Consumer[E, C])) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return ErrRunning
	}
	if !c.h.life.Add() {
		return broadcast.ErrClosed
	}
	c.running, c.logger = true, logger
	c.handled.Reopen()
	go func() {
		defer c.h.life.Done()
		run(c)
		c.stopped()
	}()
	return nil
}

// stopped records that the goroutine taking the events returned: Flush no
// longer waits for it, and the drops no line reported get one now. If
// Drain asked for it meanwhile, it first runs Drain's f.
func (c *Consumer[E, C]) stopped() {
	for {
		c.mu.Lock()
		f := c.drain
		c.drain = nil
		if f == nil {
			c.running = false
			c.handled.End()
			c.mu.Unlock()
			break
		}
		c.mu.Unlock()
		f()
	}
	c.reportRest()
}

// Drain runs f, which deals with every event left in the consumer's
// queue, once no goroutine takes them: at once, on the caller's
// goroutine, if none runs; else on the consumer's goroutine when run
// returns. It is for a consumer whose goroutine may have stopped early (a
// Go consumer whose context ended), once its queue is closed: after the
// pipeline's Shutdown.
func (c *Consumer[E, C]) Drain(f func()) {
	c.mu.Lock()
	c.drain = f
	if c.running {
		c.mu.Unlock()
		return
	}
	c.running = true // this goroutine takes the events now
	c.handled.Reopen()
	c.mu.Unlock()
	c.stopped()
}

// reportRest logs the drops at the consumer's queue that no line has
// reported yet.
func (c *Consumer[E, C]) reportRest() {
	c.mu.Lock()
	fresh, logger := c.takeDropsLocked(), c.logger
	c.mu.Unlock()
	// Not through Add: a line due now would take the count it reports
	// from Rest, and this line is the last.
	if n := fresh + c.drops.Rest(); n > 0 {
		c.logDrops(logger, n)
	}
}

// takeDropsLocked returns the drops at a watcher's queue since the last
// call. A watcher's queue drops on the broadcaster's distributor, which
// logs nothing: the consumer's goroutine logs them when it next finishes
// an event. A Fold's drops are counted and logged where they happen, on
// the recorder's goroutine (countDrop): none here.
func (c *Consumer[E, C]) takeDropsLocked() uint64 {
	if c.w == nil {
		return 0
	}
	dropped := c.q.Dropped()
	fresh := dropped - c.dropSeen
	c.dropSeen = dropped
	return fresh
}

// dropLog is a Fold's consumer as Publish sees it: the log of what its
// Fold refuses for want of room.
type dropLog interface {
	// countDrop counts one event refused at now, and returns the logger
	// and count of the line that is due, if one is (one per burst).
	countDrop(now time.Time) (logger klog.Logger, n uint64, due bool)
	logDrops(logger klog.Logger, n uint64)
}

// dropLine is a drop-log line due, for Publish to write.
type dropLine struct {
	log    dropLog
	logger klog.Logger
	n      uint64
}

// countDrop is dropLog's: it runs on the recorder's goroutine, and takes
// the consumer's lock only when a line is due, to read its logger.
func (c *Consumer[E, C]) countDrop(now time.Time) (klog.Logger, uint64, bool) {
	n, due := c.drops.Add(now, 1)
	if !due {
		return klog.Logger{}, 0, false
	}
	c.mu.Lock()
	logger := c.logger
	c.mu.Unlock()
	return logger, n, true
}

// logDrops writes a drop-log line reporting n events dropped.
func (c *Consumer[E, C]) logDrops(logger klog.Logger, n uint64) {
	logger.Error(nil, "Unable to deliver events: the watcher's queue is full, dropped events (it falls behind the recorders)",
		"watcher", c.what, "dropped", n, "reportedEvery", BurstInterval)
}
