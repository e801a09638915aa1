package natsbridge

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/heraldgo/herald/natsbridge/internal/lifecycle"
	"github.com/heraldgo/herald/natsbridge/internal/wait"
)

// Publisher sends values of T to its topic's stream, keeping a bounded
// window of values the stream has not confirmed yet. It is safe for
// concurrent use. Its zero value is not usable: get one from
// Topic.Publisher, and call Shutdown when done with it.
//
// Every value Publish or TryPublish accepts ends in exactly one of
// PublisherStats' Confirmed, Failed or Unconfirmed, or is still Pending:
// none is lost without a count.
//
// The stream stores one publisher's values in the order they were
// accepted, each once. A publisher sends its values as JetStream fast
// batches (nats-server 2.14 or later; NewTopic enables them on the
// stream), in the mode where a batch stores a value only right after the
// one before it: a value lost on the way ends the batch, with an answer
// that says how many of its values were stored, and the publisher sends
// the rest again, in order, in a new batch, under the same message ids. A
// new batch begins only when no value of the last one is in flight, and it
// never sends a copy of a value before the server has said that the batch
// carrying it ended or is unknown (a copy sent while the first is still
// being written, by a leader that lost its quorum, would be skipped as a
// duplicate and lost with that leader). So order and uniqueness hold
// within TopicOptions.Duplicates, through lost connections, restarts and
// leader elections. The one exception is a value that fails after its
// delivery timeout (PublisherOptions.DeliveryTimeout): it may have been
// stored, its acks lost, and a copy still on its way may land after values
// accepted later; the values after it keep their order.
//
// PublisherStats.Retries counts every send of a value after its first:
// each went on the wire. A publisher ends its batch whenever it has
// nothing more to send for a moment (5ms), and in Shutdown.
type Publisher[T any] struct {
	t        *Topic[T]
	nc       *nats.Conn
	inbox    string   // the server's answers arrive under inbox + "."
	idPrefix string   // message ids are idPrefix + a counter
	shutErr  error    // what Publish and TryPublish return after Shutdown
	header   []string // the ExpectedStreamHeader value, shared by every message (never written)
	// headerRoom is the size of the headers of the message with the
	// longest id: what a value must leave of the server's max payload.
	headerRoom int
	// logInvalid reports values refused before sending; logLost values
	// that failed or ended unconfirmed, or that a Forward abandoned;
	// logTrace values sent without their trace context, which did not fit.
	logInvalid, logLost, logTrace *limitedLog

	// slots holds one token per accepted value not settled yet; its
	// capacity is the window.
	slots chan struct{}
	// g runs the loop (publisher_loop.go). Its Stopping is done once
	// Shutdown has begun: nothing more is accepted. Its Aborting is done
	// once a Shutdown gave up on what was left.
	g      *lifecycle.Group
	wake   chan struct{} // the loop has something new to look at
	sub    *nats.Subscription
	status chan nats.Status // reconnections and the connection's close

	mu      sync.Mutex // guards link, counter, pumping, wakeAt, checked
	link    *link
	counter uint64
	// pumping reports whether a goroutine is sending what the link
	// planned; only that one sends, so messages leave in planned order.
	pumping bool
	wakeAt  time.Time // when the loop's timer fires: pump wakes the loop for an earlier deadline
	checked time.Time // when the loop last asked whether the stream exists

	plan []send // the list of the goroutine that set pumping, reused
}

// Publisher returns a new Publisher for the topic, configured by o (the
// zero PublisherOptions gives the defaults). It returns an error for an
// invalid o (a negative Window or AckTimeout, a Window above MaxWindow),
// ErrClosed after the topic's Shutdown has begun, ErrConfigDiffers for a
// stream opened as it is that does not take the batched publishes a
// publisher sends (open it once with TopicOptions.Update), and the
// connection's error if it cannot subscribe to the server's answers.
//
// Publisher starts one goroutine, which takes the server's acks, sends
// values again when a batch breaks, and ends batches; it exits when
// Shutdown returns. Acks arrive through one subscription on the topic's
// connection, whose goroutine (nats.go's) ends with it.
func (t *Topic[T]) Publisher(o PublisherOptions) (*Publisher[T], error) {
	if err := checkPublisherOptions(o); err != nil {
		return nil, err
	}
	if t.isClosed() {
		return nil, t.shutErr
	}
	if !t.batched {
		return nil, fmt.Errorf("%w: stream %q does not take batched publishes, which publishers send: open the topic once with TopicOptions.Update to allow them", ErrConfigDiffers, t.streamID)
	}
	cfg := newPublisherConfig(o, t.duplicates)
	p := &Publisher[T]{
		t:        t,
		nc:       t.js.Conn(),
		header:   []string{t.streamID},
		idPrefix: nuid.Next() + "-",
		slots:    make(chan struct{}, cfg.window),
		g:        lifecycle.New(),
		wake:     make(chan struct{}, 1),
		shutErr:  fmt.Errorf("natsbridge: publisher of topic %q is shut down (Publisher.Shutdown or Topic.Shutdown); make another with Topic.Publisher: %w", t.name, ErrClosed),
	}
	p.headerRoom = headerSize(p.message(nil, make(nats.Header, 2), ^uint64(0)))
	p.inbox = p.nc.NewInbox()
	p.link = newLink(cfg.link(p.inbox, nuid.Next()))
	l := t.log.With(slog.String("component", "publisher"))
	p.logInvalid, p.logLost, p.logTrace = newLimitedLog(l), newLimitedLog(l), newLimitedLog(l)
	sub, err := p.nc.Subscribe(p.inbox+".>", p.onReply)
	if err != nil {
		return nil, fmt.Errorf("natsbridge: topic %q: publisher: subscribe to the server's answers: %w", t.name, err)
	}
	p.sub = sub
	if err := t.adopt(p); err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	p.status = p.nc.StatusChanged(nats.CONNECTED, nats.CLOSED)
	p.g.Go(p.run)
	return p, nil
}

func (p *Publisher[T]) shutdown(ctx context.Context) error { return p.Shutdown(ctx) }

// Publish encodes v and hands it to the publisher, waiting while the window
// of values not confirmed yet is full. It returns once v is accepted: sent,
// or queued behind the values accepted before it to be sent as soon as
// the stream takes them (after a leader election, say). Its ack is awaited
// in the background and counted in Stats.
//
// It returns ErrClosed once Shutdown has begun, an error wrapping ErrCodec
// or ErrTooLarge for a value that cannot be sent (counted as Invalid),
// ctx.Err() if ctx ends first, and an error wrapping
// nats.ErrConnectionClosed once the connection is closed. It panics on a
// nil ctx.
//
// The value's message carries the trace context of ctx, written by
// OpenTelemetry's global propagator (otel.GetTextMapPropagator: W3C
// "traceparent" and "tracestate" headers once the application has set
// propagation.TraceContext); a watcher's Context gives it back to the
// handler. natsbridge starts no span. With no propagator set, nothing is
// added and nothing allocated. A value that fits only without its trace
// context (within about 70 bytes of the size limit) is sent without it,
// and logged.
func (p *Publisher[T]) Publish(ctx context.Context, v T) error {
	mustContext(ctx)
	if err := ctx.Err(); err != nil {
		return err // before the select, which would pick a free slot as often
	}
	data, err := p.prepare(v)
	if err != nil {
		return err
	}
	h := p.headers(ctx, len(data))
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-p.g.Stopping().Done():
		return p.shutErr
	}
	if err := p.accept(data, h); err != nil {
		return err
	}
	p.pump()
	return nil
}

// TryPublish is Publish without waiting: if the window is full it returns
// false and counts the refusal in Stats.Refused. It never waits for the
// server; like any write to a connection, sending may wait for the
// connection's buffer to take the message. It takes no context, so its
// values carry no trace context: publish with Publish where one matters.
func (p *Publisher[T]) TryPublish(v T) (sent bool, err error) {
	data, err := p.prepare(v)
	if err != nil {
		return false, err
	}
	select {
	case p.slots <- struct{}{}:
	default:
		if p.stopping() {
			return false, p.shutErr
		}
		p.mu.Lock()
		p.link.stats.refused++
		p.mu.Unlock()
		return false, nil
	}
	if err := p.accept(data, make(nats.Header, 2)); err != nil {
		return false, err
	}
	p.pump()
	return true, nil
}

// prepare checks that a value can be published and encodes it. A value
// is too large when it does not fit with natsbridge's own headers,
// whatever the tracing (see headers).
func (p *Publisher[T]) prepare(v T) ([]byte, error) {
	if p.stopping() {
		return nil, p.shutErr
	}
	if p.nc.IsClosed() {
		return nil, fmt.Errorf("natsbridge: publish to %q: %w", p.t.name, nats.ErrConnectionClosed)
	}
	data, err := encode(p.t.codec, v)
	if err != nil {
		return nil, p.invalidValue(err)
	}
	if limit := p.nc.MaxPayload(); limit > 0 && int64(len(data)+p.headerRoom) > limit {
		return nil, p.invalidValue(fmt.Errorf("%w: %d bytes encoded, at most %d fit: the server's max payload (%d) less %d bytes of headers",
			ErrTooLarge, len(data), limit-int64(p.headerRoom), limit, p.headerRoom))
	}
	return data, nil
}

// headers returns the headers of the message of a value of size bytes,
// holding the trace context of ctx (see injectTrace); accept adds
// natsbridge's own, which win over anything of the same name. The map is
// made here rather than under p.mu so that the propagator, the
// application's code, runs outside the lock.
//
// A value that fits only without its trace context is sent without it
// (and logged): a value matters more than its trace, and whether it can
// be sent must not depend on how its publisher's process traces.
func (p *Publisher[T]) headers(ctx context.Context, size int) nats.Header {
	h := make(nats.Header, 2)
	if n := injectTrace(ctx, h); n > 0 {
		if limit := p.nc.MaxPayload(); limit > 0 && int64(size+p.headerRoom+n) > limit {
			clear(h)
			p.logTrace.warn("natsbridge: value sent without its trace context, which does not fit in the message",
				slog.Int("bytes", size), slog.Int("trace_bytes", n))
		}
	}
	return h
}

// accept takes data as a new value, under the next message id, in a
// message with the headers h (see prepare); the caller holds a slot, which
// accept gives back if Shutdown has begun. It looks under p.mu, where the
// loop looks whether it may exit: a value accepted is one the loop waits
// for.
func (p *Publisher[T]) accept(data []byte, h nats.Header) error {
	p.mu.Lock()
	if p.stopping() {
		p.mu.Unlock()
		<-p.slots
		return p.shutErr
	}
	if p.link.closed || p.nc.IsClosed() {
		// The connection closed while the caller waited for room.
		p.mu.Unlock()
		<-p.slots
		return fmt.Errorf("natsbridge: publish to %q: %w", p.t.name, nats.ErrConnectionClosed)
	}
	p.counter++
	p.link.accept(&entry{msg: p.message(data, h, p.counter), added: time.Now()})
	p.mu.Unlock()
	return nil
}

// message returns the message that carries data under the message id n,
// with the headers h (a trace context, or none) and natsbridge's own. The
// headers are set here rather than through publish options; every send of
// the value sends this message, its reply subject aside: a value sent
// again carries the same headers, its trace context too.
func (p *Publisher[T]) message(data []byte, h nats.Header, n uint64) nats.Msg {
	h[jetstream.MsgIDHeader] = []string{p.idPrefix + strconv.FormatUint(n, 10)}
	h[jetstream.ExpectedStreamHeader] = p.header
	return nats.Msg{Subject: p.t.name, Data: data, Header: h}
}

// headerSize returns the size of m's headers on the wire.
func headerSize(m nats.Msg) int {
	return len("NATS/1.0\r\n") + len("\r\n") + fieldsSize(m.Header)
}

// invalidValue counts and logs a value that cannot be published, and
// returns err.
func (p *Publisher[T]) invalidValue(err error) error {
	p.mu.Lock()
	p.link.stats.invalid++
	p.mu.Unlock()
	p.logInvalid.warn("natsbridge: value not published", errAttr(err))
	return err
}

// stopping reports whether Shutdown has begun.
func (p *Publisher[T]) stopping() bool { return p.g.Stopping().Err() != nil }

// Shutdown stops accepting values and waits until the stream has confirmed
// or failed each one accepted. It returns nil then, ctx.Err() if ctx ends
// first (the values left count as Unconfirmed), or ErrUnconfirmed if values
// ended unconfirmed before (given up by another Shutdown, or their acks
// lost with a closed connection); either way its goroutine has exited.
// Publish and TryPublish return ErrClosed from the moment it begins.
func (p *Publisher[T]) Shutdown(ctx context.Context) error {
	mustContext(ctx)
	if p.g.Stop() {
		p.mu.Lock()
		p.link.closing = true
		p.mu.Unlock()
	}
	wait.Signal(p.wake)
	defer p.t.forget(p)
	defer p.flushLogs() // once the loop, which logs, has exited
	if err := p.g.Shutdown(ctx); err != nil {
		return err
	}
	return p.outcome()
}

// outcome is what a Shutdown that found the loop gone returns: nil, unless
// values ended unconfirmed.
func (p *Publisher[T]) outcome() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.link.stats.unconfirmed > 0 {
		return ErrUnconfirmed
	}
	return nil
}

// flushLogs reports the lines the publisher's logs suppressed and no later
// line reported (see limitedLog).
func (p *Publisher[T]) flushLogs() {
	p.logInvalid.flush()
	p.logLost.flush()
	p.logTrace.flush()
}
