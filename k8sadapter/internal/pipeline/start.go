package pipeline

import (
	"slices"

	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/broadcast"
)

// Watch registers a watcher's consumer whose goroutine is started, and
// may be started again, with Consumer.Go. Its watcher lives as long as the
// pipeline: what is published while no goroutine runs waits in its queue.
func Watch[E Event, C any](p *Pipeline[E], what string) (*Consumer[E, C], error) {
	p.watched.Add(1)
	missedBase := p.refused.Load()
	w, err := p.b.Watch()
	if err != nil {
		p.watched.Add(-1)
		return nil, err
	}
	c := &Consumer[E, C]{p: p, q: w, w: w, what: what, logger: p.logger, missedBase: missedBase}
	c.handled.End() // no goroutine takes its events yet
	c.stop = c.stopWatcher
	p.register(c)
	return c, nil
}

// WatchFold registers q as a sink's queue, and a consumer of it whose
// goroutine is started, and may be started again, with Consumer.Go: from
// now on every event published is offered to q, which lives as long as
// the pipeline (what is published while no goroutine runs waits in it).
// The goroutine takes q's entries (Fold.Take, Fold.Done) and reports
// with Consumer.Reach. Once the shutdown has begun it returns
// broadcast.ErrClosed.
func WatchFold[E Event, K comparable, P any, C any](p *Pipeline[E], q *Fold[E, K, P], what string) (*Consumer[E, C], error) {
	c := &Consumer[E, C]{p: p, q: q, what: what, logger: p.logger}
	if !p.addFold(q, c) {
		return nil, broadcast.ErrClosed
	}
	c.handled.End() // no goroutine takes its events yet
	c.stop = func() { p.removeFold(q) }
	p.register(c)
	return c, nil
}

// StartFold is Start for a sink whose queue is q: from now on every event
// published is offered to q; run takes q's entries until q is closed
// (Stop, Shutdown) and empty, and reports with Consumer.Reach.
func StartFold[E Event, K comparable, P any, C any](p *Pipeline[E], set *Set[E, C], q *Fold[E, K, P], what string, logger klog.Logger, run func(*Consumer[E, C])) (*Consumer[E, C], error) {
	if !p.life.Add() {
		return nil, broadcast.ErrClosed
	}
	c := &Consumer[E, C]{p: p, q: q, what: what, logger: logger, running: true}
	if !p.addFold(q, c) { // the shutdown began meanwhile
		p.life.Done()
		return nil, broadcast.ErrClosed
	}
	c.stop = func() { p.removeFold(q) }
	launch(p, set, c, run)
	return c, nil
}

// addFold makes Publish offer every event to q from now on, and log what
// q refuses in c's drop log. It reports false, adding nothing, once the
// shutdown has begun.
func (p *Pipeline[E]) addFold(q Folder[E], c dropLog) bool {
	p.gate.Lock()
	defer p.gate.Unlock()
	if p.closed {
		return false
	}
	p.folds = append(p.folds, sinkQueue[E]{q: q, log: c})
	return true
}

// removeFold makes Publish offer no event to q from now on, and closes q.
// It is idempotent.
func (p *Pipeline[E]) removeFold(q Folder[E]) {
	p.gate.Lock()
	defer p.gate.Unlock()
	p.folds = slices.DeleteFunc(p.folds, func(o sinkQueue[E]) bool { return o.q == q })
	q.Close()
}

// Start registers a consumer in set and starts its goroutine, which runs
// run and logs with logger; run takes the events (until the watcher is
// stopped or the pipeline shut down, and its queue is drained) and calls
// Done after each. When run returns, the consumer leaves the pipeline and
// its tally joins the set's ended total. Once the shutdown has begun Start
// returns broadcast.ErrClosed.
func Start[E Event, C any](p *Pipeline[E], set *Set[E, C], what string, logger klog.Logger, run func(*Consumer[E, C])) (*Consumer[E, C], error) {
	if !p.life.Add() {
		return nil, broadcast.ErrClosed
	}
	p.watched.Add(1)
	missedBase := p.refused.Load()
	w, err := p.b.Watch()
	if err != nil { // the shutdown began meanwhile
		p.watched.Add(-1)
		p.life.Done()
		return nil, err
	}
	c := &Consumer[E, C]{p: p, q: w, w: w, what: what, logger: logger, running: true, missedBase: missedBase}
	c.stop = c.stopWatcher
	launch(p, set, c, func(c *Consumer[E, C]) {
		defer p.watched.Add(-1)
		run(c)
	})
	return c, nil
}

// launch registers c, running, in set and starts its goroutine, which
// runs run; when run returns, c leaves the pipeline and its tally joins
// the set's ended total.
func launch[E Event, C any](p *Pipeline[E], set *Set[E, C], c *Consumer[E, C], run func(*Consumer[E, C])) {
	set.mu.Lock()
	set.live = append(set.live, c)
	set.mu.Unlock()
	p.register(c)
	go func() {
		defer p.life.Done()
		run(c)
		c.stopped()
		p.unregister(c)
		set.retire(c)
	}()
}

func (p *Pipeline[E]) register(c flushable) {
	p.mu.Lock()
	p.consumers = append(p.consumers, c)
	p.mu.Unlock()
}

func (p *Pipeline[E]) unregister(c flushable) {
	p.mu.Lock()
	p.consumers = slices.DeleteFunc(p.consumers, func(o flushable) bool { return o == c })
	p.mu.Unlock()
}
