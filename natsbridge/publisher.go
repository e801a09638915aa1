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
)

// Publisher sends values of T to its topic's stream, keeping a bounded
// window of values the stream has not confirmed yet. It is safe for
// concurrent use. Its zero value is not usable: get one from
// Topic.Publisher, and call Shutdown when done with it.
//
// Every value Publish or TryPublish accepts ends in exactly one of
// PublisherStats' Confirmed, Failed or Unconfirmed, or is still Pending:
// none is lost without a count. The stream stores one publisher's values
// in the order they were accepted, each once (see the package doc,
// "Order").
type Publisher[T any] struct {
	t        *Topic[T]
	nc       *nats.Conn
	idPrefix string   // message ids are idPrefix + a counter
	header   []string // the ExpectedStreamHeader value, shared by every message (never written)
	// headerRoom is the size of the headers of the message with the
	// longest id: what a value must leave of the server's max payload.
	headerRoom int
	// logInvalid reports values refused before sending; logLost values
	// that failed or ended unconfirmed, or that a Forward abandoned.
	logInvalid, logLost *limitedLog

	// slots holds one token per accepted value not settled yet; its
	// capacity is the window.
	slots   chan struct{}
	closing chan struct{} // closed when Shutdown begins
	wake    chan struct{} // the loop has something new to look at
	done    chan struct{} // closed when the loop has exited
	sub     *nats.Subscription
	status  chan nats.Status // reconnections and the connection's close

	mu      sync.Mutex // guards the fields below it
	link    *link
	closed  bool // Shutdown has begun: nothing more is accepted
	aborted bool // a Shutdown gave up on what was left
	counter uint64
	// pumping reports whether a goroutine is sending what the link
	// planned; only that one sends, so messages leave in planned order.
	pumping bool
	plan    []send    // the pumping goroutine's list, reused
	wakeAt  time.Time // when the loop's timer fires: pump wakes the loop for an earlier deadline
	checked time.Time // when the loop last asked whether the stream exists
}

// PublisherStats is a snapshot of a Publisher's counters, taken at one
// instant: Published = Confirmed + Failed + Unconfirmed + Pending, and
// Pending never exceeds the window.
type PublisherStats struct {
	// Published counts values accepted by Publish and TryPublish.
	Published uint64
	// Confirmed counts accepted values the stream acknowledged: each is
	// stored exactly once.
	Confirmed uint64
	// Retries counts sends of a value after its first: every one went on
	// the wire, under the value's message id (the stream drops a copy it
	// holds already).
	Retries uint64
	// Failed counts accepted values the stream refused (or that found it
	// deleted), or that were not confirmed within the delivery timeout
	// (see PublisherOptions.DeliveryTimeout; such a value may still have
	// been stored, its acks lost). They are logged, one line a second
	// with a count (see TopicOptions.Logger).
	Failed uint64
	// Unconfirmed counts accepted values still awaiting their ack when
	// the context given to Shutdown ended, or when the connection was
	// closed (or drained): no ack can come. They may or may not be
	// stored.
	Unconfirmed uint64
	// Pending is the number of accepted values not confirmed yet: sent
	// and awaiting their ack, or waiting for their turn to be sent.
	Pending int
	// Refused counts TryPublish calls refused because the window was
	// full.
	Refused uint64
	// Invalid counts values refused before sending: a codec error or
	// panic, or an encoding larger than the server accepts.
	Invalid uint64
	// Abandoned counts values a Forward took from its broadcaster and
	// could not publish because the Publisher shut down or the Forward's
	// stop context ended.
	Abandoned uint64
	// LastSeq is the stream sequence of the last value stored by a batch
	// that has ended (a publisher ends its batch whenever it has nothing
	// more to send, and in Shutdown): once Shutdown has returned nil, the
	// sequence of the last value stored.
	LastSeq uint64
}

// Publisher returns a new Publisher for the topic, configured by o (the
// zero PublisherOptions gives the defaults). It panics if a field of o is
// negative where that is not allowed, or if o.Window is above MaxWindow:
// that is a programming error. After the topic's Shutdown has begun it
// returns a Publisher that is already shut down.
//
// Publisher starts one goroutine, which takes the server's acks, sends
// values again when a batch breaks, and ends batches; it exits when
// Shutdown returns. Acks arrive through one subscription on the topic's
// connection, whose goroutine (nats.go's) ends with it.
func (t *Topic[T]) Publisher(o PublisherOptions) *Publisher[T] {
	cfg := checkPublisherOptions(o, t.duplicates)
	p := &Publisher[T]{
		t:        t,
		nc:       t.js.Conn(),
		header:   []string{t.streamID},
		idPrefix: nuid.Next() + "-",
		slots:    make(chan struct{}, cfg.window),
		closing:  make(chan struct{}),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	p.headerRoom = headerSize(p.message(nil, ^uint64(0)))
	inbox := p.nc.NewInbox()
	p.link = newLink(cfg.link(inbox, nuid.Next()))
	l := t.log.With(slog.String("component", "publisher"))
	p.logInvalid, p.logLost = newLimitedLog(l), newLimitedLog(l)
	p.status = p.nc.StatusChanged(nats.CONNECTED, nats.CLOSED)
	sub, err := p.nc.Subscribe(inbox+".>", p.onReply)
	if err == nil {
		p.sub = sub
		err = t.adopt(p)
	}
	if err != nil {
		p.link.closed = true // nothing is sent: the loop exits at once
		p.t.log.Warn("natsbridge: publisher not started", errAttr(err))
	}
	go p.run()
	if err != nil {
		_ = p.Shutdown(context.Background())
	}
	return p
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
func (p *Publisher[T]) Publish(ctx context.Context, v T) error {
	mustContext(ctx)
	data, err := p.prepare(v)
	if err != nil {
		return err
	}
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-p.closing:
		return ErrClosed
	}
	if err := p.accept(data); err != nil {
		return err
	}
	p.pump()
	return nil
}

// TryPublish is Publish without waiting: if the window is full it returns
// false and counts the refusal in Stats.Refused. It never waits for the
// server; like any write to a connection, sending may wait for the
// connection's buffer to take the message.
func (p *Publisher[T]) TryPublish(v T) (sent bool, err error) {
	data, err := p.prepare(v)
	if err != nil {
		return false, err
	}
	select {
	case p.slots <- struct{}{}:
	default:
		if p.isClosing() {
			return false, ErrClosed
		}
		p.mu.Lock()
		p.link.stats.refused++
		p.mu.Unlock()
		return false, nil
	}
	if err := p.accept(data); err != nil {
		return false, err
	}
	p.pump()
	return true, nil
}

// prepare checks that a value can be published and encodes it.
func (p *Publisher[T]) prepare(v T) ([]byte, error) {
	if p.isClosing() {
		return nil, ErrClosed
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

// accept takes data as a new value, under the next message id; the caller
// holds a slot, which accept gives back if Shutdown has begun.
func (p *Publisher[T]) accept(data []byte) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.slots
		return ErrClosed
	}
	if p.link.closed || p.nc.IsClosed() {
		// The connection closed while the caller waited for room.
		p.mu.Unlock()
		<-p.slots
		return fmt.Errorf("natsbridge: publish to %q: %w", p.t.name, nats.ErrConnectionClosed)
	}
	p.counter++
	p.link.accept(&entry{msg: p.message(data, p.counter), added: time.Now()})
	p.mu.Unlock()
	return nil
}

// message returns the message that carries data under the message id n.
// The headers are set here rather than through publish options; every
// send of the value sends this message, its reply subject aside.
func (p *Publisher[T]) message(data []byte, n uint64) nats.Msg {
	return nats.Msg{Subject: p.t.name, Data: data, Header: nats.Header{
		jetstream.MsgIDHeader:          {p.idPrefix + strconv.FormatUint(n, 10)},
		jetstream.ExpectedStreamHeader: p.header,
	}}
}

// headerSize returns the size of m's headers on the wire.
func headerSize(m nats.Msg) int {
	n := len("NATS/1.0\r\n") + len("\r\n")
	for k, vs := range m.Header {
		for _, v := range vs {
			n += len(k) + len(": ") + len(v) + len("\r\n")
		}
	}
	return n
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

// isClosing reports whether Shutdown has begun.
func (p *Publisher[T]) isClosing() bool {
	select {
	case <-p.closing:
		return true
	default:
		return false
	}
}

// Shutdown stops the publisher: Publish and TryPublish return ErrClosed
// from the moment it begins, and it waits until the stream has confirmed
// every accepted value, sending values again as usual. It returns nil once
// every accepted value is confirmed or failed (see Stats), or ctx.Err() if
// ctx ended first: the publisher then gives up on the values left and
// counts them as Unconfirmed. Once values ended unconfirmed (given up by
// another Shutdown, or their acks lost with a closed connection), every
// later Shutdown returns ErrUnconfirmed (or its own ctx.Err()), never nil.
// Either way the publisher's goroutine has exited when Shutdown returns.
// It is idempotent and safe to call from any goroutine; it panics on a nil
// ctx.
func (p *Publisher[T]) Shutdown(ctx context.Context) error {
	mustContext(ctx)
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		p.link.closing = true
		close(p.closing)
	}
	p.mu.Unlock()
	p.signal()
	defer p.t.forget(p)
	defer p.flushLogs() // once the loop, which logs, has exited
	select {
	case <-p.done:
		return p.outcome()
	case <-ctx.Done():
	}
	p.mu.Lock()
	p.aborted = true
	p.mu.Unlock()
	p.signal()
	<-p.done
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
		return p.outcome()
	}
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
}

// Stats returns a snapshot of the publisher's counters, all read at one
// instant. It is safe to call at any time, also after Shutdown.
func (p *Publisher[T]) Stats() PublisherStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.link.stats
	return PublisherStats{
		Published:   c.published,
		Confirmed:   c.confirmed,
		Retries:     c.retries,
		Failed:      c.failed,
		Unconfirmed: c.unconfirmed,
		Pending:     p.link.pending(),
		Refused:     c.refused,
		Invalid:     c.invalid,
		Abandoned:   c.abandoned,
		LastSeq:     c.lastSeq,
	}
}
