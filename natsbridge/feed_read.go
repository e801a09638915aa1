package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The feed's read loop: messages taken from an ephemeral consumer in
// order, decoded and handed out, and the checks of an idle consumer.

// consume hands out the messages of one consumer until it fails.
func (f *feed[T]) consume(it jetstream.MessagesContext, cons jetstream.Consumer) error {
	var delivered uint64 // the consumer's delivery sequence
	var transit transitCheck
	idle := newIdleClock(f.g.Stopping(), f.t.heartbeat)
	defer idle.stop()
	for {
		msg, err := it.Next(idle.wait...)
		if idle.passed(err) {
			if err := transit.verdict(f.check(cons, delivered), delivered); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		idle.tick()
		seq, dseq, ok := ackSequences(msg.Reply())
		if !ok {
			return fmt.Errorf("natsbridge: topic %q: not a stream's message: %q", f.t.name, msg.Reply())
		}
		if dseq != delivered+1 {
			return errLostInTransit
		}
		delivered = dseq
		if !f.take(seq) {
			continue // handled already; a fresh consumer never sends it
		}
		if err := f.deliver(seq, msg, 1); err != nil {
			return err
		}
	}
}

// transitCheck weighs what the idle checks of one consumer find. A check
// that finds the server ahead of the feed may have met a message still on
// its way: the message is taken for lost only if the next idle check finds
// the feed no further.
type transitCheck struct {
	behind bool   // the last check found the server ahead
	at     uint64 // what the feed had received then
}

// verdict takes the error of an idle check made when the feed had
// received delivered, and returns the error that ends the consumer, or
// nil.
func (c *transitCheck) verdict(err error, delivered uint64) error {
	switch {
	case errors.Is(err, errLostInTransit) && (!c.behind || c.at != delivered):
		c.behind, c.at = true, delivered
		return nil
	case err != nil:
		return err
	}
	c.behind = false
	return nil
}

// deliver decodes the message taken at seq, delivered count times, and
// places its value with the feed's destination, with the message's
// headers if they carry a trace context, and, on a durable consumer, the
// message itself (to acknowledge it). A message the codec cannot decode
// is counted, logged and placed as a poison message. Either way seq is
// handled.
func (f *feed[T]) deliver(seq uint64, msg jetstream.Msg, count int) error {
	v, err := decode(f.t.codec, msg.Data())
	it := item[T]{seq: seq, v: v, err: err, h: traceHeaders(msg.Headers()), count: count}
	if f.durable != nil {
		it.msg, it.epoch = msg, f.durable.acks.epoch.Load()
	}
	if err != nil {
		f.poisoned.Add(1)
		f.t.poisoned.Add(1)
		f.logPoison.warn("natsbridge: poison message", slog.Uint64("seq", seq), errAttr(err))
	}
	if err := f.dest.put(f.g.Stopping(), it); err != nil {
		return err
	}
	f.advance(seq)
	return nil
}

// take moves next past seq, the sequence of a message the consumer
// delivered, and reports whether the feed is to handle it (false if it
// was handled already). A consumer that lost nothing skips only
// sequences the stream no longer holds: those between next and seq are
// counted as gaps, and handled.
func (f *feed[T]) take(seq uint64) bool {
	for {
		n := f.next.Load()
		if seq < n {
			return false
		}
		if f.next.CompareAndSwap(n, seq+1) {
			if seq > n {
				f.countGaps(n, seq-1)
				f.advance(seq - 1)
			}
			return true
		}
		// A Flush settled a tail meanwhile (see settle): look again.
	}
}

// check asks the server about an idle consumer. It returns an error if the
// consumer is gone (a server restart) or unreachable, and errLostInTransit
// if the server delivered more than the feed received: a message dropped
// on the way (a lost connection, a client buffer overflow) that no later
// message would reveal, or one still on its way (consume asks again a
// heartbeat later before it takes it for lost).
func (f *feed[T]) check(cons jetstream.Consumer, delivered uint64) error {
	ctx, cancel := context.WithTimeout(f.g.Stopping(), resumeTimeout)
	defer cancel()
	info, err := cons.Info(ctx)
	if err != nil {
		return err
	}
	if info.Delivered.Consumer > delivered {
		return errLostInTransit
	}
	return nil
}

// idleClock tells a feed's read loop when a heartbeat has passed with no
// message, without a timer per message: Next waits on a context that a
// timer ends once a whole heartbeat went by without a tick; each message
// ticks (one atomic add).
type idleClock struct {
	parent context.Context
	every  time.Duration
	ticks  atomic.Uint64
	seen   uint64 // ticks when the timer last looked (the timer's goroutine)
	ctx    context.Context
	cancel context.CancelFunc
	timer  *time.Timer
	wait   []jetstream.NextOpt // Next's options for the current period
}

func newIdleClock(parent context.Context, every time.Duration) *idleClock {
	c := &idleClock{parent: parent, every: every}
	c.period()
	return c
}

// period starts waiting for an idle heartbeat anew.
func (c *idleClock) period() {
	c.ctx, c.cancel = context.WithCancel(c.parent)
	c.wait = []jetstream.NextOpt{jetstream.NextContext(c.ctx)}
	c.seen = c.ticks.Load()
	cancel := c.cancel
	c.timer = time.AfterFunc(c.every, func() { c.look(cancel) })
}

// look ends the period if no message came since the last look, and looks
// again a heartbeat later otherwise.
func (c *idleClock) look(cancel context.CancelFunc) {
	if n := c.ticks.Load(); n != c.seen {
		c.seen = n
		c.timer.Reset(c.every)
		return
	}
	cancel()
}

func (c *idleClock) tick() { c.ticks.Add(1) }

// passed reports whether err, what Next returned, says that a heartbeat
// passed with no message (and starts the next period), rather than that
// the feed stopped or the read failed.
func (c *idleClock) passed(err error) bool {
	if err == nil || c.parent.Err() != nil || !errors.Is(err, context.Canceled) {
		return false
	}
	c.period()
	return true
}

func (c *idleClock) stop() {
	c.timer.Stop()
	c.cancel()
}

// ackSequences reads the stream sequence and the consumer's delivery
// sequence of a message from its reply subject (see delivery).
func ackSequences(reply string) (sseq, dseq uint64, ok bool) {
	d, ok := parseDelivery(reply)
	return d.stream, d.consumer, ok
}

// delivery is what a message's reply subject says of its delivery.
type delivery struct {
	stream   uint64 // the stream sequence
	consumer uint64 // the consumer's delivery sequence
	count    uint64 // how many times the message was delivered, this one included
}

// parseDelivery reads a message's delivery from its reply subject, as the
// server writes it:
// $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<time>.<backlog>
// (backlog: the messages the consumer has yet to deliver), or with a
// domain and an account hash after $JS.ACK (and a last token of its own).
// It is jetstream.Msg.Metadata without the allocations, for the read loop.
func parseDelivery(reply string) (delivery, bool) {
	rest, ok := strings.CutPrefix(reply, "$JS.ACK.")
	if !ok {
		return delivery{}, false
	}
	skip := 2 // stream, consumer
	switch n := strings.Count(rest, ".") + 1; {
	case n == 7:
	case n >= 9:
		skip = 4 // domain, account hash too
	default:
		return delivery{}, false
	}
	for range skip {
		_, rest, _ = strings.Cut(rest, ".")
	}
	c, rest, _ := strings.Cut(rest, ".")
	s, rest, _ := strings.Cut(rest, ".")
	d, _, _ := strings.Cut(rest, ".")
	count, err0 := strconv.ParseUint(c, 10, 64)
	sseq, err1 := strconv.ParseUint(s, 10, 64)
	dseq, err2 := strconv.ParseUint(d, 10, 64)
	if err0 != nil || err1 != nil || err2 != nil {
		return delivery{}, false
	}
	return delivery{stream: sseq, consumer: dseq, count: count}, true
}
