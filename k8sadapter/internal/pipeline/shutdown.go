package pipeline

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/heraldgo/herald/broadcast"
)

// Flush returns once every event published before the call has been
// handled by every consumer started before the call whose goroutine runs:
// written (or given up on) by a sink, passed to a handler. It returns
// ctx.Err() if ctx ends first. After the shutdown it returns nil at once,
// unless a consumer is still stuck in a call. It panics on a nil ctx.
func (p *Pipeline[E, K, P, C]) Flush(ctx context.Context) error {
	p.mustContext(ctx)
	p.mu.Lock()
	consumers := slices.Clone(p.consumers)
	p.mu.Unlock()
	// Place every event published so far in the queues; after the
	// shutdown that is done already.
	if err := p.b.Flush(ctx); err != nil && !errors.Is(err, broadcast.ErrClosed) {
		return err
	}
	for _, c := range consumers {
		if err := c.await(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Shutdown stops the pipeline: recorders are refused from now on, every
// event published before is handed to the consumers (the Folds are
// closed: their goroutines end once they are empty), and Shutdown waits
// until their goroutines have handled it and ended. If ctx ends first, it
// aborts and returns ctx.Err() without waiting further: Aborted reports
// true, what waits in the sinks' queues is abandoned and counted at once
// (Tally.Abandoned), and a goroutine still in a call abandons the rest of
// what it holds when the call returns (a handler's queue, counted in
// HandlerCounts.Abandoned; the rest of a sink's entry). The abort is
// logged, with what was abandoned at once and what the goroutines still
// hold. Every later call waits for the goroutines again, and returns
// broadcast.ErrClosed rather than nil: events were abandoned. Either way
// the drops no log line reported yet get one. Shutdown is idempotent. It
// panics on a nil ctx.
func (p *Pipeline[E, K, P, C]) Shutdown(ctx context.Context) error {
	p.mustContext(ctx)
	p.life.Stop()
	// From here on Publish refuses; the Folds take no more events, and
	// their goroutines end once they have dealt with what waits.
	p.gate.Lock()
	p.closed = true
	for _, s := range p.folds {
		s.q.Close()
	}
	p.gate.Unlock()
	// DropNewest watchers never make the distributor wait: this returns
	// once it has placed every queued event and closed the watchers.
	err := p.b.Shutdown(ctx)
	if err == nil {
		err = p.life.Wait(ctx)
	} else {
		p.life.Abort()
	}
	p.mu.Lock()
	left := slices.Clone(p.consumers)
	p.mu.Unlock()
	if err != nil {
		p.abandon(left)
	}
	for _, c := range left {
		c.reportRest()
	}
	if n := p.queueFullLog.Rest(); n > 0 {
		p.logger.Error(nil, "Unable to hand events to the event handlers: too many queued events, dropped events", "droppedSinceLastReport", n)
	}
	if err == nil && p.life.Aborted() {
		err = broadcast.ErrClosed // an earlier call was cut short: events were abandoned
	}
	return err
}

// abandon empties the sinks' queues of consumers, for a shutdown whose
// deadline passed, and logs what it abandoned and what the goroutines
// still running hold: the events left in the handlers' queues, which
// each abandons once its current call returns, and the entries the sinks
// are writing.
func (p *Pipeline[E, K, P, C]) abandon(consumers []flushable) {
	var abandoned uint64
	for _, c := range consumers {
		abandoned += c.abandonQueued()
	}
	h := p.handlers.sum()
	held := h.Queued - h.Handled - h.Dropped
	p.logger.Error(nil, "Event broadcaster shutdown deadline passed: abandoning the events not handled yet",
		"abandoned", abandoned, "heldByHandlers", held, "goroutinesRunning", p.life.Live())
}

// mustContext panics on a nil ctx, as the standard library does: that is
// a programming error.
func (p *Pipeline[E, K, P, C]) mustContext(ctx context.Context) {
	if ctx == nil {
		panic(p.name + ": nil Context")
	}
}

// ShutdownWithin runs shutdown with a context that ends after d: the
// body of the adapters' Shutdown, which returns nothing (a deadline that
// passes is logged by the pipeline's Shutdown, with what it abandoned).
func ShutdownWithin(d time.Duration, shutdown func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_ = shutdown(ctx)
}
