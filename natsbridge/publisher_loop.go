package natsbridge

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge/internal/wait"
)

// The publisher's loop: onReply takes the server's answers as they come
// (on nats.go's goroutine), and run, the publisher's goroutine, moves the
// link on as time passes; both free the window's slots of the values
// settled and log the failures.

// onReply takes an answer of the server (on nats.go's goroutine for the
// subscription), then sends what it allows.
func (p *Publisher[T]) onReply(m *nats.Msg) {
	r, ok := parseReply(p.inbox, m)
	if !ok {
		return
	}
	p.mu.Lock()
	p.link.reply(r, time.Now())
	freed, failures := p.takeSettledLocked()
	p.mu.Unlock()
	p.release(freed, failures)
	p.pump()
	wait.Signal(p.wake) // the loop's next deadline moved
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
// value is settled (or a Shutdown gave up on them: Aborting).
func (p *Publisher[T]) run() {
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
		case <-p.g.Aborting().Done(): // step exits at once
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
	if p.g.Aborted() || (!p.link.closed && p.nc.IsClosed()) {
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
	exit = p.stopping() && p.link.done()
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
	ctx, cancel := context.WithTimeout(p.g.Aborting(), streamCheckTimeout)
	defer cancel()
	_, err := p.t.stream.Info(ctx)
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return
	}
	p.mu.Lock()
	p.link.streamGone(errors.Join(ErrStreamGone, err))
	p.mu.Unlock()
}
