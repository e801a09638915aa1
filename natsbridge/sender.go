package natsbridge

import (
	"errors"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/heraldgo/herald/natsbridge/internal/wait"
)

// The publisher's side of the wire: pump sends what its link plans, in
// order, and sendFailed sorts out what the connection refused. The answers
// and the passing of time are the loop's (publisher_loop.go).

// Timings of the batch protocol that are not options.
const (
	// maxProbeTimeout bounds how long a batch's start, ping or commit waits
	// for an answer before it is sent again (AckTimeout, if shorter).
	// After a leader election the next probe finds the new leader within
	// this time, or at once if the server answers "no responders".
	maxProbeTimeout = time.Second
	// maxBackoff is the longest wait between probes after "no responders".
	maxBackoff = 500 * time.Millisecond
	// linger is how long an open batch with nothing more to send waits
	// before the publisher ends it, so that the server acks its tail.
	linger = 5 * time.Millisecond
	// streamCheckTimeout bounds the question whether the stream still
	// exists, asked after "no responders"; streamCheckEvery how often it
	// is asked, at most.
	streamCheckTimeout = 250 * time.Millisecond
	streamCheckEvery   = time.Second
)

// publisherConfig is PublisherOptions with the defaults filled in.
type publisherConfig struct {
	window                      int
	ackTimeout, deliveryTimeout time.Duration
}

// newPublisherConfig fills in the defaults of o, which
// checkPublisherOptions accepted; duplicates is the stream's duplicates
// window.
func newPublisherConfig(o PublisherOptions, duplicates time.Duration) publisherConfig {
	c := publisherConfig{window: o.Window, ackTimeout: o.AckTimeout, deliveryTimeout: o.DeliveryTimeout}
	if c.window == 0 {
		c.window = DefaultWindow
	}
	if c.ackTimeout == 0 {
		c.ackTimeout = DefaultAckTimeout
	}
	switch {
	case c.deliveryTimeout == 0:
		c.deliveryTimeout = duplicates
	case c.deliveryTimeout < 0:
		c.deliveryTimeout = 0 // never
	}
	return c
}

func (c publisherConfig) link(inbox, batchPrefix string) linkConfig {
	return linkConfig{
		inbox:           inbox,
		batchPrefix:     batchPrefix,
		interval:        uint64(min(max(c.window/maxOutstandingAcks, 1), maxAckInterval)),
		ackTimeout:      c.ackTimeout,
		probeTimeout:    min(c.ackTimeout, maxProbeTimeout),
		maxBackoff:      min(c.ackTimeout, maxBackoff),
		linger:          linger,
		deliveryTimeout: c.deliveryTimeout,
	}
}

// pump sends what the link plans, until it plans nothing more. Only one
// goroutine pumps at a time, so that messages leave in the order planned;
// a call that finds another pumping returns at once: that one plans again
// before it stops, and so sends what this caller added.
func (p *Publisher[T]) pump() {
	p.mu.Lock()
	if p.pumping {
		p.mu.Unlock()
		return
	}
	p.pumping = true
	for {
		now := time.Now()
		p.plan = p.link.plan(now, p.plan[:0])
		if len(p.plan) == 0 {
			break
		}
		// The loop's timer is for the link's next deadline: wake it if
		// what was planned brought that deadline forward (a batch begun
		// waits for its first answer).
		if next := p.link.next(now); next.Before(p.wakeAt) {
			p.wakeAt = next
			wait.Signal(p.wake)
		}
		p.mu.Unlock()
		n, err := p.transmit(p.plan)
		p.mu.Lock()
		if err != nil {
			p.link.unsend(p.plan[n:])
			p.sendFailed(err)
			break
		}
	}
	clear(p.plan) // no entry kept alive by the list
	p.pumping = false
	p.mu.Unlock()
}

// transmit sends plan in order and returns how many it sent, with the
// error that stopped it.
func (p *Publisher[T]) transmit(plan []send) (int, error) {
	for i, s := range plan {
		var err error
		if s.e != nil {
			s.e.msg.Reply = s.reply
			err = p.nc.PublishMsg(&s.e.msg)
		} else {
			err = p.nc.PublishRequest(p.t.name, s.reply, nil)
		}
		if err != nil {
			return i, err
		}
	}
	return len(plan), nil
}

// sendFailed handles a send the connection refused: a full reconnect
// buffer is tried again by the loop a moment later; a closed connection
// ends every value held. The caller holds p.mu.
func (p *Publisher[T]) sendFailed(err error) {
	switch {
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionDraining):
		p.link.closed = true
	case errors.Is(err, nats.ErrReconnectBufExceeded):
		p.link.stalled = true
	default:
		// A message the connection will never take (a max payload lower
		// on the server it reconnected to): the value fails.
		if p.link.ring.Len() > 0 && p.link.sent == 0 {
			p.link.fail(refusal(err))
		}
	}
	wait.Signal(p.wake)
}
