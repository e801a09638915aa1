package pipeline

import (
	"slices"

	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/broadcast"
)

// NewFold returns an empty queue for a sink, of at most limit waiting
// entries (at least 1), folding by the adapter's Folding: give it to
// StartSink or WatchSink.
func (p *Pipeline[E, K, P, C]) NewFold(limit int) *Fold[E, K, P] {
	return newFold[E, K, P](limit, p.adapter)
}

// StartSink starts a sink whose queue is q, with a goroutine that runs
// run and logs with logger: from now on every event published is offered
// to q; run takes q's entries (Fold.Take, Fold.Done) until q is closed
// (Stop, Shutdown) and empty, and reports with Consumer.Reach. When run
// returns, the sink leaves the pipeline and its tally joins Sinks' ended
// total. Once the shutdown has begun StartSink returns
// broadcast.ErrClosed.
func (p *Pipeline[E, K, P, C]) StartSink(q *Fold[E, K, P], what string, logger klog.Logger, run func(*Consumer[E, C])) (*Consumer[E, C], error) {
	if !p.life.Add() {
		return nil, broadcast.ErrClosed
	}
	c := &Consumer[E, C]{h: &p.hub, q: q, what: what, logger: logger, running: true}
	if !p.addFold(q, c) { // the shutdown began meanwhile
		p.life.Done()
		return nil, broadcast.ErrClosed
	}
	c.stop = func() { p.removeFold(q) }
	launch(&p.hub, p.sinks, c, run)
	return c, nil
}

// WatchSink registers q as a sink's queue, and its consumer, whose
// goroutine is started, and may be started again, with Consumer.Go: from
// now on every event published is offered to q, which lives as long as
// the pipeline (what is published while no goroutine runs waits in it).
// The goroutine takes q's entries (Fold.Take, Fold.Done) and reports with
// Consumer.Reach. Once the shutdown has begun it returns
// broadcast.ErrClosed.
func (p *Pipeline[E, K, P, C]) WatchSink(q *Fold[E, K, P], what string) (*Consumer[E, C], error) {
	c := &Consumer[E, C]{h: &p.hub, q: q, what: what, logger: p.logger}
	if !p.addFold(q, c) {
		return nil, broadcast.ErrClosed
	}
	c.handled.End() // no goroutine takes its events yet
	c.stop = func() { p.removeFold(q) }
	p.sinks.add(c)
	p.register(c)
	return c, nil
}

// addFold makes Publish offer every event to q from now on, and log what
// q refuses in c's drop log. It reports false, adding nothing, once the
// shutdown has begun.
func (p *Pipeline[E, K, P, C]) addFold(q *Fold[E, K, P], c *Consumer[E, C]) bool {
	p.gate.Lock()
	defer p.gate.Unlock()
	if p.closed {
		return false
	}
	p.folds = append(p.folds, sinkQueue[E, K, P, C]{q: q, c: c})
	return true
}

// removeFold makes Publish offer no event to q from now on, and closes q.
// It is idempotent.
func (p *Pipeline[E, K, P, C]) removeFold(q *Fold[E, K, P]) {
	p.gate.Lock()
	defer p.gate.Unlock()
	p.folds = slices.DeleteFunc(p.folds, func(o sinkQueue[E, K, P, C]) bool { return o.q == q })
	q.Close()
}

// watch registers a watcher's consumer whose goroutine is started, and
// may be started again, with Consumer.Go. Its watcher lives as long as the
// pipeline: what is published while no goroutine runs waits in its queue.
func watch[E Event, C any](h *hub[E], what string) (*Consumer[E, C], error) {
	h.watched.Add(1)
	missedBase := h.refused.Load()
	w, err := h.b.Watch()
	if err != nil {
		h.watched.Add(-1)
		return nil, err
	}
	c := &Consumer[E, C]{h: h, q: w, w: w, what: what, logger: h.logger, missedBase: missedBase}
	c.handled.End() // no goroutine takes its events yet
	c.stop = c.stopWatcher
	h.register(c)
	return c, nil
}

// start registers a watcher's consumer in set and starts its goroutine,
// which runs run and logs with logger; run takes the events (until the
// watcher is stopped or the pipeline shut down, and its queue is drained)
// and calls Done after each. When run returns, the consumer leaves the
// pipeline and its tally joins the set's ended total. Once the shutdown
// has begun start returns broadcast.ErrClosed.
func start[E Event, C any](h *hub[E], set *set[E, C], what string, logger klog.Logger, run func(*Consumer[E, C])) (*Consumer[E, C], error) {
	if !h.life.Add() {
		return nil, broadcast.ErrClosed
	}
	h.watched.Add(1)
	missedBase := h.refused.Load()
	w, err := h.b.Watch()
	if err != nil { // the shutdown began meanwhile
		h.watched.Add(-1)
		h.life.Done()
		return nil, err
	}
	c := &Consumer[E, C]{h: h, q: w, w: w, what: what, logger: logger, running: true, missedBase: missedBase}
	c.stop = c.stopWatcher
	launch(h, set, c, func(c *Consumer[E, C]) {
		defer h.watched.Add(-1)
		run(c)
	})
	return c, nil
}

// launch registers c, running, in set and starts its goroutine, which
// runs run; when run returns, c leaves the pipeline and its tally joins
// the set's ended total.
func launch[E Event, C any](h *hub[E], set *set[E, C], c *Consumer[E, C], run func(*Consumer[E, C])) {
	set.add(c)
	h.register(c)
	go func() {
		defer h.life.Done()
		run(c)
		c.stopped()
		h.unregister(c)
		set.retire(c)
	}()
}

func (h *hub[E]) register(c flushable) {
	h.mu.Lock()
	h.consumers = append(h.consumers, c)
	h.mu.Unlock()
}

func (h *hub[E]) unregister(c flushable) {
	h.mu.Lock()
	h.consumers = slices.DeleteFunc(h.consumers, func(o flushable) bool { return o == c })
	h.mu.Unlock()
}
