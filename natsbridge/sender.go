package natsbridge

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The publisher's side of the wire: pump sends what its link plans, in
// order; onReply takes the server's answers; run is the publisher's
// goroutine, which moves the link on as time passes.

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

// checkPublisherOptions panics on options no publisher can work with and
// fills in the defaults; duplicates is the stream's duplicates window.
func checkPublisherOptions(o PublisherOptions, duplicates time.Duration) publisherConfig {
	switch {
	case o.Window < 0:
		panic("natsbridge: negative PublisherOptions.Window")
	case o.Window > MaxWindow:
		panic("natsbridge: PublisherOptions.Window " + strconv.Itoa(o.Window) + " is above MaxWindow (" + strconv.Itoa(MaxWindow) + ")")
	case o.AckTimeout < 0:
		panic("natsbridge: negative PublisherOptions.AckTimeout")
	}
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
			p.signal()
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
		if p.link.ring.len() > 0 && p.link.sent == 0 {
			p.link.fail(refusal(err))
		}
	}
	p.signal()
}

// signal wakes the loop, without waiting.
func (p *Publisher[T]) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// onReply takes an answer of the server (on nats.go's goroutine for the
// subscription), then sends what it allows.
func (p *Publisher[T]) onReply(m *nats.Msg) {
	r, ok := parseReply(p.link.cfg.inbox, m)
	if !ok {
		return
	}
	p.mu.Lock()
	p.link.reply(r, time.Now())
	freed, failures := p.takeSettledLocked()
	p.mu.Unlock()
	p.release(freed, failures)
	p.pump()
	p.signal() // the loop's next deadline moved
}

// takeSettledLocked takes what the link settled since it was last asked:
// the slots to free and the failures to log.
func (p *Publisher[T]) takeSettledLocked() (int, []failure) {
	n, f := p.link.freed, p.link.failures
	p.link.freed, p.link.failures = 0, nil
	return n, f
}

// release frees n slots and logs the failures.
func (p *Publisher[T]) release(n int, failures []failure) {
	for range n {
		<-p.slots
	}
	for _, f := range failures {
		p.logLost.warn("natsbridge: publish failed", errAttr(f.err), slog.Int("sends", f.sends))
	}
}

// run is the publisher's goroutine: it moves the link on as time passes,
// sends what that allows, and exits once Shutdown has begun and every
// value is settled (or a Shutdown gave up on them).
func (p *Publisher[T]) run() {
	defer close(p.done)
	defer p.nc.RemoveStatusListener(p.status)
	if p.sub != nil {
		defer func() { _ = p.sub.Unsubscribe() }()
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next, exit, check := p.step()
		if exit {
			return
		}
		if check {
			p.checkStream()
		}
		p.pump()
		p.mu.Lock()
		p.wakeAt = next
		p.mu.Unlock()
		timer.Reset(time.Until(next))
		select {
		case <-p.wake:
		case <-timer.C:
		case st := <-p.status:
			if st == nats.CONNECTED { // again, after a loss: CLOSED is seen by step
				p.mu.Lock()
				p.link.reconnected(time.Now())
				p.mu.Unlock()
			}
		}
	}
}

// step moves the link on to now and reports when to look again, whether
// to exit, and whether to ask if the stream still exists.
func (p *Publisher[T]) step() (next time.Time, exit, check bool) {
	p.mu.Lock()
	now := time.Now()
	if p.aborted || (!p.link.closed && p.nc.IsClosed()) {
		p.link.closed = true
	}
	if p.link.closed {
		p.link.abandon() // no ack can come: what is held is unconfirmed
	}
	next = p.link.tick(now)
	if p.link.stalled {
		// The connection's reconnect buffer was full: try again soon.
		p.link.stalled = false
		next = minTime(next, now.Add(25*time.Millisecond))
	}
	check, p.link.checkStream = p.link.checkStream && now.Sub(p.checked) >= streamCheckEvery, false
	if check {
		p.checked = now
	}
	exit = p.closed && p.link.done()
	freed, failures := p.takeSettledLocked()
	lost := p.link.stats.unconfirmed
	p.mu.Unlock()
	p.release(freed, failures)
	if exit && lost > 0 {
		p.logLost.warn("natsbridge: values left unconfirmed", slog.Uint64("values", lost))
	}
	return next, exit, check
}

// checkStream asks whether the stream still exists, after answers of "no
// responders": a deleted stream fails every value held at once, rather
// than keep them until their delivery timeout. Any other answer (no
// leader yet, the server unreachable) leaves them.
func (p *Publisher[T]) checkStream() {
	// A deleted stream is answered at once, by the cluster's meta leader;
	// a stream electing its leader not at all: a short wait, so that the
	// loop goes on probing meanwhile.
	ctx, cancel := context.WithTimeout(context.Background(), streamCheckTimeout)
	defer cancel()
	_, err := p.t.stream.Info(ctx)
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return
	}
	p.mu.Lock()
	p.link.streamGone(errors.Join(ErrStreamGone, err))
	p.mu.Unlock()
}
