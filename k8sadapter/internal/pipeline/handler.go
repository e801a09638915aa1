package pipeline

import "k8s.io/klog/v2"

// HandlerCounts are the counters of an event handler's consumer.
type HandlerCounts struct {
	// Panics counts handler calls that panicked.
	Panics uint64
	// Abandoned counts events not handed to the handler because a
	// shutdown's deadline had passed; Handled counts them too (they are
	// done with).
	Abandoned uint64
}

// StartHandler starts a consumer that calls handler with each event, in
// order, on a goroutine of its own, and then ended, if not nil, once the
// last event was handled. A handler that panics is logged and counted, and
// the next event goes on. Once a shutdown's deadline has passed, the
// events left are not handed to the handler: they are counted as
// abandoned, and the goroutine ends.
func (p *Pipeline[E, K, P, C]) StartHandler(logger klog.Logger, handler func(E), ended func()) (*Consumer[E, HandlerCounts], error) {
	aborting := p.life.Aborting()
	return start(&p.hub, p.handlers, "event handler", logger, func(c *Consumer[E, HandlerCounts]) {
		var counts HandlerCounts
		for ev := range c.All() {
			if aborting.Err() != nil {
				counts.Abandoned++
				c.Done(&counts)
				continue
			}
			if r := call(handler, ev); r != nil {
				counts.Panics++
				logger.Error(nil, "Event handler panicked", "panic", r, "event", klog.KObj(ev))
			}
			c.Done(&counts)
		}
		if counts.Abandoned > 0 {
			logger.Error(nil, "Shutdown deadline passed: abandoned the events queued for the handler", "abandoned", counts.Abandoned)
		}
		if ended != nil {
			ended()
		}
	})
}

// call calls handler and returns what it panicked with, if it did (since
// Go 1.21 a panic never recovers as nil).
func call[E any](handler func(E), ev E) (panicked any) {
	defer func() { panicked = recover() }()
	handler(ev)
	return nil
}

// Handlers returns the tally of every handler started so far.
func (p *Pipeline[E, K, P, C]) Handlers() Tally[HandlerCounts] { return p.handlers.sum() }
