package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Publisher sends values of T to its topic's stream, with a bounded window
// of values awaiting their ack. It is safe for concurrent use. Its zero
// value is not usable: get one from Topic.Publisher, and call Shutdown when
// done with it.
//
// Every value Publish or TryPublish accepts ends in exactly one of
// PublisherStats' Confirmed, Failed or Unconfirmed, or is still Pending:
// none is lost without a count.
type Publisher[T any] struct {
	t          *Topic[T]
	prefix     string   // message ids are prefix + a counter
	streamHdr  []string // the ExpectedStreamHeader value, shared by every message (never written)
	ackTimeout time.Duration
	maxRetries int
	// logInvalid reports values refused before sending; logLost values
	// that ended unconfirmed or failed, or that a Forward abandoned.
	logInvalid, logLost *limitedLog

	// slots holds one token per value awaiting its ack; its capacity is
	// the window. queue carries the sent values, oldest first, to the
	// reaper; it never blocks, since a sender holds a slot.
	slots chan struct{}
	queue chan *pending
	// backlog holds values the reaper took from queue ahead of their
	// turn (see resendLost), oldest first; only the reaper uses it.
	backlog []*pending

	closing chan struct{} // closed when Shutdown begins
	done    chan struct{} // closed when the reaper has exited
	// abort is closed when a Shutdown context ends first: it is
	// abortCtx.Done(), closed by cancelAbort. abortCtx bounds the
	// reaper's own requests to the server.
	abort       <-chan struct{}
	abortCtx    context.Context
	cancelAbort context.CancelFunc

	// Shutdown closes queue once closed is set and no sender is left
	// between its check of closed and its push; or, if its context ends
	// first, sets aborted, after which senders count their value as
	// unconfirmed instead of pushing it.
	mu      sync.Mutex // guards closed, aborted, counter, sending, queueClosed
	closed  bool
	aborted bool
	counter uint64 // message ids sent so far
	sending int    // senders past their check of closed, not yet done
	// queueClosed reports whether queue is closed.
	queueClosed bool

	published   atomic.Uint64
	confirmed   atomic.Uint64
	duplicates  atomic.Uint64
	retries     atomic.Uint64
	failed      atomic.Uint64
	unconfirmed atomic.Uint64
	refused     atomic.Uint64
	invalid     atomic.Uint64
	abandoned   atomic.Uint64
	lastSeq     atomic.Uint64
}

// pending is one value sent and awaiting its ack.
type pending struct {
	msg   nats.Msg
	ack   jetstream.PubAckFuture
	sent  time.Time
	tries int
	// failed is an outcome resendLost took from ack.Err() and left for
	// await.
	failed error
}

// PublisherStats is a snapshot of a Publisher's counters. At every moment
// Published = Confirmed + Failed + Unconfirmed + Pending.
type PublisherStats struct {
	// Published counts values accepted by Publish and TryPublish.
	Published uint64
	// Confirmed counts accepted values the stream acknowledged: each is
	// stored exactly once.
	Confirmed uint64
	// Duplicates counts, among Confirmed, acks that said the stream
	// already held the message id: a retry of a value whose first ack was
	// lost, stored once.
	Duplicates uint64
	// Retries counts sends after the first (same message id).
	Retries uint64
	// Failed counts accepted values the stream refused (or that found it
	// deleted), or whose retries ran out (such a value may still have
	// been stored, its acks late or lost). They are logged, one line a
	// second with a count (see TopicOptions.Logger).
	Failed uint64
	// Unconfirmed counts accepted values still awaiting their ack when
	// the context given to Shutdown ended, or when the connection was
	// closed (or drained): they were sent, and no ack can come. They may
	// or may not be stored.
	Unconfirmed uint64
	// Pending is the number of accepted values awaiting their ack now.
	Pending int
	// Refused counts TryPublish calls refused because the window was
	// full, or the connection could take no more (see TryPublish).
	Refused uint64
	// Invalid counts values refused before sending: a codec error or
	// panic, or an encoding larger than the server accepts.
	Invalid uint64
	// Abandoned counts values a Forward took from its broadcaster and
	// could not publish because the Publisher shut down or the Forward's
	// stop context ended.
	Abandoned uint64
	// LastSeq is the highest stream sequence acknowledged so far.
	LastSeq uint64
}

// Publisher returns a new Publisher for the topic, configured by o (the
// zero PublisherOptions gives the defaults). It panics if a field of o is
// negative where that is not allowed, or if o.Window is above MaxWindow:
// that is a programming error. After the topic's Shutdown has begun it
// returns a Publisher that is already shut down.
//
// Publisher starts one goroutine, the reaper, which waits for acks in the
// order values were sent, sends a value again when its ack fails or times
// out, and frees its place in the window. It exits when Shutdown returns.
func (t *Topic[T]) Publisher(o PublisherOptions) *Publisher[T] {
	if o.Window < 0 {
		panic("natsbridge: negative PublisherOptions.Window")
	}
	if o.Window > MaxWindow {
		panic(fmt.Sprintf("natsbridge: PublisherOptions.Window %d is above MaxWindow (%d)", o.Window, MaxWindow))
	}
	if o.AckTimeout < 0 {
		panic("natsbridge: negative PublisherOptions.AckTimeout")
	}
	window := o.Window
	if window == 0 {
		window = DefaultWindow
	}
	p := &Publisher[T]{
		t:          t,
		streamHdr:  []string{t.streamID},
		prefix:     nuid.Next() + "-",
		ackTimeout: o.AckTimeout,
		maxRetries: o.MaxRetries,
		slots:      make(chan struct{}, window),
		queue:      make(chan *pending, window),
		closing:    make(chan struct{}),
		done:       make(chan struct{}),
	}
	p.abortCtx, p.cancelAbort = context.WithCancel(context.Background())
	p.abort = p.abortCtx.Done()
	l := t.log.With(slog.String("component", "publisher"))
	p.logInvalid, p.logLost = newLimitedLog(l), newLimitedLog(l)
	if p.ackTimeout == 0 {
		p.ackTimeout = DefaultAckTimeout
	}
	switch {
	case p.maxRetries == 0:
		p.maxRetries = DefaultMaxRetries
	case p.maxRetries < 0:
		p.maxRetries = 0
	}
	go p.reap()
	if err := t.adopt(p); err != nil {
		_ = p.Shutdown(context.Background()) // nothing was sent: returns at once
	}
	return p
}

func (p *Publisher[T]) shutdown(ctx context.Context) error { return p.Shutdown(ctx) }

// Publish encodes v and sends it to the stream, waiting while the window of
// values awaiting their ack is full, and while the connection cannot take
// more: its limit of pending acks (shared by every user of the jetstream
// context) is reached, or, while it reconnects, its reconnect buffer is
// full. It returns once v is sent, not once it is acknowledged: the ack is
// awaited in the background, and counted in Stats. It returns ErrClosed
// once Shutdown has begun, an error wrapping ErrCodec or ErrTooLarge for a
// value that cannot be sent (counted as Invalid), ctx.Err() if ctx ends
// first (noticed within 200ms while the connection holds it back), and the
// connection's error (wrapped) if the connection is closed. It panics on a
// nil ctx.
//
// Values published from one goroutine are stored in the order of the
// calls, except a value sent again after a lost connection, which may be
// stored after values published later (see the package doc).
func (p *Publisher[T]) Publish(ctx context.Context, v T) error {
	mustContext(ctx)
	if p.isClosing() {
		return ErrClosed
	}
	data, err := p.encode(v)
	if err != nil {
		return err
	}
	retry := time.Duration(0) // the wait after a full reconnect buffer
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		case <-p.closing:
			return ErrClosed
		}
		err := p.send(data)
		switch {
		case errors.Is(err, jetstream.ErrTooManyStalledMsgs):
			// send waited (up to jetstream's stall wait) for the
			// jetstream context's pending acks to fall below its limit:
			// look at ctx and Shutdown, then wait again.
			continue
		case errors.Is(err, nats.ErrReconnectBufExceeded):
			// Nothing says when the buffer empties (on reconnecting):
			// wait, 25ms doubling to 1s, then try again.
			retry = min(max(2*retry, 25*time.Millisecond), time.Second)
			if err := p.sleep(ctx, retry); err != nil {
				return err
			}
			continue
		}
		return err
	}
}

// sleep waits for d, or until ctx ends or Shutdown begins.
func (p *Publisher[T]) sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.closing:
		return ErrClosed
	}
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

// TryPublish is Publish without waiting: if the window is full, or the
// connection cannot take more (see Publish), it returns false and counts
// the refusal in Stats.Refused. It returns ErrClosed once Shutdown has
// begun. It never waits for an ack or for room in the window; like any
// write to a connection, it may wait for the connection's buffer to take
// the message.
func (p *Publisher[T]) TryPublish(v T) (sent bool, err error) {
	if p.isClosing() {
		return false, ErrClosed
	}
	data, err := p.encode(v)
	if err != nil {
		return false, err
	}
	select {
	case p.slots <- struct{}{}:
	default:
		if p.isClosing() {
			return false, ErrClosed
		}
		p.refused.Add(1)
		return false, nil
	}
	if err := p.send(data, noStall...); err != nil {
		if errors.Is(err, jetstream.ErrTooManyStalledMsgs) || errors.Is(err, nats.ErrReconnectBufExceeded) {
			// The connection's own limits are reached: a full window
			// too.
			p.refused.Add(1)
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// encode marshals v and checks its size against the server's limit.
func (p *Publisher[T]) encode(v T) ([]byte, error) {
	data, err := encode(p.t.codec, v)
	if err != nil {
		return nil, p.invalidValue(err)
	}
	if limit := p.t.js.Conn().MaxPayload(); limit > 0 && int64(len(data)) > limit {
		return nil, p.invalidValue(fmt.Errorf("%w: %d bytes encoded, the server accepts %d", ErrTooLarge, len(data), limit))
	}
	return data, nil
}

// invalidValue counts and logs a value that cannot be published, and
// returns err.
func (p *Publisher[T]) invalidValue(err error) error {
	p.invalid.Add(1)
	p.logInvalid.warn("natsbridge: value not published", errAttr(err))
	return err
}

// noStall makes PublishMsgAsync refuse at once when the JetStream
// context's own limit of pending publishes is reached (TryPublish).
var noStall = []jetstream.PublishOpt{jetstream.WithStallWait(time.Nanosecond)}

// send sends data under a new message id; the caller holds a slot, which
// send gives back if the value is not accepted. Without opts, it waits as
// long as the connection's default when its own async limit is reached.
func (p *Publisher[T]) send(data []byte, opts ...jetstream.PublishOpt) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.slots
		return ErrClosed
	}
	p.counter++
	id := p.prefix + strconv.FormatUint(p.counter, 10)
	p.sending++ // Shutdown closes the queue only after this push
	p.mu.Unlock()

	// The headers are set here rather than through publish options, which
	// cost an allocation each; retries send the same message, ids and all.
	e := &pending{msg: nats.Msg{Subject: p.t.name, Data: data, Header: nats.Header{
		jetstream.MsgIDHeader:          {id},
		jetstream.ExpectedStreamHeader: p.streamHdr,
	}}}
	ack, err := p.t.js.PublishMsgAsync(&e.msg, opts...)

	p.mu.Lock()
	p.sending--
	if err == nil {
		p.published.Add(1)
		if p.aborted {
			// Shutdown gave up on the values in flight, and the reaper
			// is gone: count this one as they were.
			p.unconfirmed.Add(1)
		} else {
			// Never blocks: the queue holds at most one value per slot,
			// and this sender holds one.
			e.ack, e.sent = ack, time.Now()
			p.queue <- e
		}
	}
	p.closeQueueLocked()
	p.mu.Unlock()
	if err != nil {
		<-p.slots
		if errors.Is(err, nats.ErrMaxPayload) { // the headers took it over the limit
			return p.invalidValue(fmt.Errorf("%w: %w", ErrTooLarge, err))
		}
		return fmt.Errorf("natsbridge: publish to %q: %w", p.t.name, err)
	}
	return nil
}

// closeQueueLocked closes the queue once Shutdown has begun and no sender
// can push to it any more, which ends the reaper once it has taken what is
// queued.
func (p *Publisher[T]) closeQueueLocked() {
	if p.closed && p.sending == 0 && !p.queueClosed {
		p.queueClosed = true
		close(p.queue)
	}
}

// reap is the reaper goroutine: it takes sent values in order and waits for
// each one's ack, sending it again when the ack fails or times out, until
// Shutdown closes the queue. Once a Shutdown context has ended it counts
// what is left as unconfirmed.
func (p *Publisher[T]) reap() {
	defer close(p.done)
	defer p.cancelAbort() // its requests end with it
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if len(p.backlog) > 0 {
			e := p.backlog[0]
			p.backlog[0] = nil
			p.backlog = p.backlog[1:]
			p.await(e, timer)
			<-p.slots
			continue
		}
		select {
		case e, ok := <-p.queue:
			if !ok {
				return
			}
			p.await(e, timer)
			<-p.slots
		case <-p.abort:
			// Senders push nothing once aborted is set, which happened
			// before abort was closed: what is queued is all there is.
			for {
				select {
				case _, ok := <-p.queue:
					if !ok {
						return
					}
					p.unconfirmed.Add(1)
				default:
					return
				}
			}
		}
	}
}

// await waits for e's outcome and counts it.
func (p *Publisher[T]) await(e *pending, timer *time.Timer) {
	for {
		select {
		case <-p.abort:
			p.unconfirmed.Add(1)
			return
		default:
		}
		// An outcome that has arrived wins over a deadline that has
		// passed meanwhile: the reaper may come to e late.
		var err error
		select {
		case ack := <-e.ack.Ok():
			p.confirm(ack)
			return
		case err = <-e.ack.Err():
		default:
			if e.failed != nil {
				err, e.failed = e.failed, nil
				break
			}
			timer.Reset(max(time.Until(e.sent.Add(p.ackTimeout)), 0))
			select {
			case ack := <-e.ack.Ok():
				timer.Stop()
				p.confirm(ack)
				return
			case err = <-e.ack.Err():
				timer.Stop()
			case <-timer.C:
				err = jetstream.ErrAsyncPublishTimeout
			case <-p.abort:
				timer.Stop()
				p.unconfirmed.Add(1)
				return
			}
		}
		if p.ackLost(err) {
			p.lostAck(e, err)
			return
		}
		if !retriable(err) || e.tries >= p.maxRetries || p.streamGone(err) {
			p.fail(e, err)
			return
		}
		switch p.backoff(e, err, timer) {
		case backoffAbort:
			p.unconfirmed.Add(1)
			return
		case backoffAck:
			return
		}
		e.tries++
		p.retries.Add(1)
		// The same message, headers included: the stream drops it if it
		// stored the first send (Nats-Msg-Id, within its Duplicates).
		ack, serr := p.t.js.PublishMsgAsync(&e.msg)
		if serr != nil {
			switch {
			case p.ackLost(serr):
				p.lostAck(e, serr)
				return
			case !retriable(serr):
				p.fail(e, serr)
				return
			}
			e.sent = time.Now().Add(-p.ackTimeout) // try again after the next back-off
			continue
		}
		e.ack, e.sent = ack, time.Now()
		if errors.Is(err, nats.ErrDisconnected) {
			p.resendLost()
		}
	}
}

// resendLost sends again, at once, every value behind the one being
// awaited whose ack the loss of the connection failed too, so that a burst
// of acks lost together is sent again together: awaited one after the
// other, each would cost a round trip. It takes what is queued into the
// backlog; a value it cannot send again keeps its error, for await.
func (p *Publisher[T]) resendLost() {
	for more := true; more; {
		select {
		case e, ok := <-p.queue:
			if !ok {
				more = false
				break
			}
			p.backlog = append(p.backlog, e)
		default:
			more = false
		}
	}
	for _, e := range p.backlog {
		if e.failed != nil {
			continue
		}
		select {
		case <-p.abort:
			return
		default:
		}
		var err error
		select {
		case err = <-e.ack.Err():
		default:
			continue // acknowledged, or still awaited
		}
		if !errors.Is(err, nats.ErrDisconnected) || e.tries >= p.maxRetries || p.ackLost(err) {
			e.failed = err
			continue
		}
		ack, serr := p.t.js.PublishMsgAsync(&e.msg, noStall...)
		if serr != nil {
			e.failed = err // await sends it again, or counts it
			continue
		}
		e.tries++
		p.retries.Add(1)
		e.ack, e.sent = ack, time.Now()
	}
}

// ackLost reports whether err, the failure of a value already sent,
// means that no ack can come any more and the value cannot be sent
// again: the connection was closed, or is draining. The stream may have
// stored the value; only its answer (a refusal) or running out of
// retries makes a sent value Failed.
func (p *Publisher[T]) ackLost(err error) bool {
	if errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrConnectionDraining) {
		return true
	}
	// A lost or late ack on a connection closed since: no ack, nor a
	// retry, can follow.
	return retriable(err) && p.t.js.Conn().IsClosed()
}

// streamGone reports whether err, no answer from any stream, is because
// the topic's stream was deleted: no retry could store the value then, and
// retrying would hold up every value behind it for the whole back-off. It
// asks the server, for at most a second (less if a Shutdown gives up
// meanwhile); any other answer (the server unreachable, JetStream
// starting after a restart) reports false, and the value is sent again as
// usual.
func (p *Publisher[T]) streamGone(err error) bool {
	if !errors.Is(err, jetstream.ErrNoStreamResponse) && !errors.Is(err, nats.ErrNoResponders) {
		return false
	}
	ctx, cancel := context.WithTimeout(p.abortCtx, time.Second)
	defer cancel()
	_, err = p.t.stream.Info(ctx)
	return errors.Is(err, jetstream.ErrStreamNotFound)
}

// lostAck counts a value sent whose ack the connection's end lost.
func (p *Publisher[T]) lostAck(e *pending, err error) {
	p.unconfirmed.Add(1)
	p.logLost.warn("natsbridge: ack lost with the connection", errAttr(err), slog.Int("tries", e.tries+1))
}

// fail counts a value the stream refused (or that found it deleted), or
// whose retries ran out.
func (p *Publisher[T]) fail(e *pending, err error) {
	p.failed.Add(1)
	p.logLost.warn("natsbridge: publish failed", errAttr(err), slog.Int("tries", e.tries+1))
}

// confirm counts an ack.
func (p *Publisher[T]) confirm(ack *jetstream.PubAck) {
	p.confirmed.Add(1)
	if ack.Duplicate {
		p.duplicates.Add(1)
	}
	// Only the reaper writes lastSeq.
	if ack.Sequence > p.lastSeq.Load() {
		p.lastSeq.Store(ack.Sequence)
	}
}

// Outcomes of a back-off.
const (
	backoffDone  = iota // time to send again
	backoffAck          // the last send was acknowledged late, and counted
	backoffAbort        // a Shutdown context ended
)

// backoff waits before e is sent again after err: 25ms, doubling with each
// try, at most 1s. An ack of the last send that arrives meanwhile is taken:
// a late ack is as good as any. The first resend after a lost connection
// does not wait: it goes out on the new connection (or into its reconnect
// buffer), so that a burst of acks lost together is sent again at once.
func (p *Publisher[T]) backoff(e *pending, err error, timer *time.Timer) int {
	if e.tries == 0 && errors.Is(err, nats.ErrDisconnected) {
		select {
		case <-p.abort:
			return backoffAbort
		default:
			return backoffDone
		}
	}
	timer.Reset(min(25*time.Millisecond<<min(e.tries, 6), time.Second))
	select {
	case <-timer.C:
		return backoffDone
	case ack := <-e.ack.Ok():
		timer.Stop()
		p.confirm(ack)
		return backoffAck
	case <-p.abort:
		timer.Stop()
		return backoffAbort
	}
}

// retriable reports whether a failed publish may succeed if sent again:
// a lost connection, a lost or late ack, or a stream that did not answer
// (JetStream still starting after a restart). A refusal by the stream, a
// closed connection or a too large message are final (a value already
// sent whose connection closed is Unconfirmed, not Failed: see ackLost).
func retriable(err error) bool {
	switch {
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrMaxPayload):
		return false
	case errors.Is(err, nats.ErrDisconnected),
		errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, nats.ErrConnectionReconnecting),
		errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, jetstream.ErrAsyncPublishTimeout),
		errors.Is(err, jetstream.ErrTooManyStalledMsgs),
		errors.Is(err, nats.ErrReconnectBufExceeded),
		errors.Is(err, jetstream.ErrJetStreamNotEnabled):
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		// 503: JetStream is not available yet (a restart, a leader
		// election); anything else is the stream's answer.
		return apiErr.Code == 503
	}
	return false
}

// Shutdown stops the publisher: Publish and TryPublish return ErrClosed
// from the moment it begins, and it waits for the ack of every value sent,
// sending values again as usual. It returns nil once every accepted value
// is confirmed or failed (see Stats), or ctx.Err() if ctx ended first: the
// publisher then gives up on the values still awaiting their ack, and on
// those a Publish call was sending at that moment, and counts them as
// Unconfirmed. Once a Shutdown has given up, every other Shutdown call,
// concurrent or later, returns ErrUnconfirmed (or its own ctx.Err()),
// never nil; so does every Shutdown once the connection was closed before
// the acks of values sent. Either way the reaper goroutine has exited when
// Shutdown returns. It is idempotent and safe to call from any goroutine;
// it panics on a nil ctx.
func (p *Publisher[T]) Shutdown(ctx context.Context) error {
	mustContext(ctx)
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.closing)
	}
	p.closeQueueLocked()
	p.mu.Unlock()
	defer p.t.forget(p)
	defer p.flushLogs() // once the reaper, which logs, has exited
	select {
	case <-p.done:
		return p.outcome()
	case <-ctx.Done():
	}
	select {
	case <-p.done:
		return p.outcome()
	default:
	}
	p.mu.Lock()
	if !p.aborted {
		p.aborted = true
		p.cancelAbort()
	}
	p.mu.Unlock()
	<-p.done
	return ctx.Err()
}

// outcome is what a Shutdown that found the reaper gone returns: nil,
// unless values ended unconfirmed, given up by a Shutdown or their acks
// lost to the connection's end.
func (p *Publisher[T]) outcome() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	// The reaper counted what it gave up on, or the connection's end
	// lost, before it exited; a sender still sending when a Shutdown gave
	// up counts its value after.
	if p.unconfirmed.Load() > 0 || (p.aborted && p.sending > 0) {
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

// Stats returns a snapshot of the publisher's counters. It is safe to call
// at any time, also after Shutdown. The counters are read one by one: a
// snapshot taken while values are in flight may be off by those values
// (Pending is derived so that the sum holds).
func (p *Publisher[T]) Stats() PublisherStats {
	s := PublisherStats{
		Confirmed:   p.confirmed.Load(),
		Duplicates:  p.duplicates.Load(),
		Retries:     p.retries.Load(),
		Failed:      p.failed.Load(),
		Unconfirmed: p.unconfirmed.Load(),
		Refused:     p.refused.Load(),
		Invalid:     p.invalid.Load(),
		Abandoned:   p.abandoned.Load(),
		LastSeq:     p.lastSeq.Load(),
	}
	s.Published = p.published.Load()
	done := s.Confirmed + s.Failed + s.Unconfirmed
	if s.Published < done {
		s.Published = done
	}
	s.Pending = int(s.Published - done)
	return s
}
