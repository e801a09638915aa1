package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A durable watcher reads through a durable consumer that every process
// watching with the same name shares (WatchOptions.Durable): the server
// keeps its position, the last value acknowledged, and its priority group
// pins one reader at a time, the active one; the others stand by, their
// requests waiting. The active reader acknowledges what its application
// read, in batches (AckAll: one ack covers every value before it) and at
// Stop. When it dies, the server unpins it once it has sent no request for
// the takeover time, and pins a standby at the next value.
//
// A reader that becomes active (its first message under a new pin) puts
// the consumer back at its acknowledged position (the reset API) if
// anything was delivered beyond it, to a reader that died or to this one
// before: the values after the last one acknowledged then come again, in
// stream order, before any later one. Deliveries made before the reset
// still arrive first; the first after it has consumer sequence 1, and the
// reader drops what comes before that one.

const (
	// durableGroup is the priority group every durable watcher pulls in.
	durableGroup = "herald"
	// ackEvery and ackBatch say when the active reader acknowledges what
	// its application read: after ackBatch values, or ackEvery after the
	// last ack. What was read and not acknowledged comes again to the next
	// reader after a crash or a takeover.
	ackEvery = 100 * time.Millisecond
	ackBatch = 256
	// durableAckWait is how long the server waits for an ack before it
	// delivers a value again to the same reader: long, since a reader
	// acknowledges only what its application read, and drops a value
	// delivered again that it handled.
	durableAckWait = time.Hour
)

// durable is a feed's state for a durable consumer. The feed goroutine
// owns it, but for the atomics.
type durable struct {
	name     string
	takeover time.Duration

	pin         string // the pin under which this reader is active; "" standing by
	syncing     bool   // a reset was asked: drop deliveries made before it
	epoch       uint64 // resets asked so far
	redeliverTo uint64 // values up to this stream sequence were delivered before, to another reader
	acked       uint64 // the stream sequence acknowledged last
	ackedAt     time.Time

	lastRead    atomic.Pointer[readMark] // the last value the application read
	redelivered atomic.Uint64
}

// readMark is a value read from a durable consumer: its message, to
// acknowledge it (and every value before it).
type readMark struct {
	seq   uint64
	epoch uint64
	msg   jetstream.Msg
}

// validDurable checks a durable name: ASCII letters, digits, '-' and '_'.
func validDurable(name string) error {
	if len(name) > maxNameLength {
		return fmt.Errorf("%w: durable name longer than %d bytes", ErrInvalidName, maxNameLength)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
		if !ok {
			return fmt.Errorf("%w: durable name %q holds %q (allowed: letters, digits, '-', '_')", ErrInvalidName, name, r)
		}
	}
	return nil
}

// checkDurable returns an error for durable options no watcher can work
// with.
func checkDurable(o WatchOptions) error {
	switch {
	case o.Durable == "" && o.Takeover != 0:
		return errors.New("natsbridge: WatchOptions.Takeover without Durable")
	case o.Durable == "":
		return nil
	case o.Takeover < 0 || (o.Takeover > 0 && o.Takeover < 2*time.Second):
		return fmt.Errorf("natsbridge: WatchOptions.Takeover %v is below 2s", o.Takeover)
	}
	return validDurable(o.Durable)
}

// bindDurable returns the durable consumer name, created with o if it is
// missing, and the stream sequence after its acknowledged position.
func (t *Topic[T]) bindDurable(ctx context.Context, o WatchOptions, takeover time.Duration) (jetstream.Consumer, uint64, error) {
	cons, err := t.stream.Consumer(ctx, o.Durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		cfg := jetstream.ConsumerConfig{
			Durable:        o.Durable,
			Description:    "herald durable watcher of " + t.name,
			DeliverPolicy:  jetstream.DeliverNewPolicy,
			AckPolicy:      jetstream.AckAllPolicy,
			AckWait:        durableAckWait,
			MaxDeliver:     -1,
			MaxAckPending:  -1,
			PriorityPolicy: jetstream.PriorityPolicyPinned,
			PriorityGroups: []string{durableGroup},
			PinnedTTL:      takeover,
			Metadata:       map[string]string{metaTopic: t.name},
		}
		if o.From > 0 {
			cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, o.From
		}
		cons, err = t.stream.CreateConsumer(ctx, cfg)
		if errors.Is(err, jetstream.ErrConsumerExists) {
			cons, err = t.stream.Consumer(ctx, o.Durable) // made meanwhile, by another process
		}
	}
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, 0, fmt.Errorf("%w: %q", ErrStreamGone, t.streamID)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("natsbridge: topic %q: durable %q: %w", t.name, o.Durable, err)
	}
	info := cons.CachedInfo()
	if c := info.Config; c.PriorityPolicy != jetstream.PriorityPolicyPinned || c.AckPolicy != jetstream.AckAllPolicy {
		return nil, 0, fmt.Errorf("%w: consumer %q of stream %q is not a durable watcher's", ErrNameConflict, o.Durable, t.streamID)
	}
	return cons, info.AckFloor.Stream + 1, nil
}

// DeleteDurable deletes the durable position name (WatchOptions.Durable)
// from the server: a watcher that uses it ends (its Err says why), and a
// later Watch with that name begins again, as a new one, with its From.
// A durable position lives until it is deleted so, or its stream is. ctx
// bounds the request; DeleteDurable panics on a nil ctx.
func (t *Topic[T]) DeleteDurable(ctx context.Context, name string) error {
	mustContext(ctx)
	if err := validDurable(name); err != nil {
		return err
	}
	if err := t.stream.DeleteConsumer(ctx, name); err != nil {
		return fmt.Errorf("natsbridge: topic %q: delete durable %q: %w", t.name, name, err)
	}
	return nil
}

// openDurable starts reading the durable consumer, in its priority group.
func (f *feed[T]) openDurable(ctx context.Context) (jetstream.Consumer, jetstream.MessagesContext, error) {
	d := f.durable
	cons, err := f.t.stream.Consumer(ctx, d.name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, nil, fmt.Errorf("%w: %q", ErrStreamGone, f.t.streamID)
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return nil, nil, fmt.Errorf("%w: %q", ErrDurableGone, d.name)
	case err != nil:
		return nil, nil, fmt.Errorf("natsbridge: topic %q: durable %q: %w", f.t.name, d.name, err)
	}
	// An active reader asks at least twice per takeover time (the
	// position's, set when it was made), so that an idle one keeps its
	// turn.
	if ttl := cons.CachedInfo().Config.PinnedTTL; ttl > 0 {
		d.takeover = ttl
	}
	expiry := max(d.takeover/2, time.Second)
	it, err := cons.Messages(
		jetstream.PullPriorityGroup(durableGroup),
		jetstream.PullMaxMessages(f.t.readAhead),
		jetstream.PullExpiry(expiry),
		jetstream.PullHeartbeat(min(f.t.heartbeat, expiry/2)),
		jetstream.WithMessagesErrOnMissingHeartbeat(true),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("natsbridge: topic %q: read durable %q: %w", f.t.name, d.name, err)
	}
	d.pin = "" // a new request is a standby's until a message says otherwise
	return cons, it, nil
}

// consumeDurable hands out the messages of the durable consumer until it
// fails, acknowledging what the application read as it goes.
func (f *feed[T]) consumeDurable(it jetstream.MessagesContext, cons jetstream.Consumer) error {
	d := f.durable
	var delivered uint64 // the consumer's delivery sequence, since the last reset
	wait := []jetstream.NextOpt{jetstream.NextMaxWait(ackEvery)}
	checked := time.Now()
	for {
		msg, err := it.Next(wait...)
		if errors.Is(err, nats.ErrTimeout) {
			f.ackRead(false)
			// A standby looks more often: it is the one to notice that
			// the active reader died (see checkDurable).
			every := f.t.heartbeat
			if d.pin == "" {
				every = min(every, d.takeover/2)
			}
			if time.Since(checked) >= every {
				checked = time.Now()
				if err := f.checkDurable(cons, delivered); err != nil {
					return err
				}
			}
			continue
		}
		if err != nil {
			return err
		}
		md, err := msg.Metadata()
		if err != nil {
			return err
		}
		if pin := msg.Headers().Get(pinHeader); pin != d.pin {
			// This reader is the active one now.
			if err := f.activate(cons, pin, md); err != nil {
				return err
			}
			if d.syncing {
				continue // the message comes again after the reset
			}
			delivered = md.Sequence.Consumer - 1
		}
		if d.syncing {
			if md.Sequence.Consumer != 1 {
				continue // delivered before the reset
			}
			d.syncing, delivered = false, 0
		}
		if md.Sequence.Consumer != delivered+1 {
			// A delivery lost on the way: from the last one acknowledged
			// again (what this reader handled it drops).
			if err := f.reset(cons); err != nil {
				return err
			}
			continue
		}
		delivered = md.Sequence.Consumer
		if err := f.handleDurable(md.Sequence.Stream, msg); err != nil {
			return err
		}
		f.ackRead(false)
	}
}

// pinHeader carries, on each message, the pin of the reader it went to.
const pinHeader = "Nats-Pin-Id"

// handleDurable hands one message of the durable consumer out.
func (f *feed[T]) handleDurable(seq uint64, msg jetstream.Msg) error {
	d := f.durable
	if !f.take(seq) {
		return nil // handled already
	}
	if seq <= d.redeliverTo {
		d.redelivered.Add(1)
	}
	v, err := decode(f.t.codec, msg.Data())
	if err != nil {
		f.poisoned.Add(1)
		f.t.poisoned.Add(1)
		f.logPoison.warn("natsbridge: poison message skipped", slog.Uint64("seq", seq), errAttr(err))
		f.advance(seq)
		return nil
	}
	if err := f.out(f.ctx, seq, v, &readMark{seq: seq, epoch: d.epoch, msg: msg}); err != nil {
		return err
	}
	f.advance(seq)
	return nil
}

// activate makes this reader the active one, under pin, at the message
// described by md, the first under that pin. It takes the consumer's
// acknowledged position; if anything was delivered beyond it, the
// consumer goes back to it (reset), so that the values after it come
// again, in order.
func (f *feed[T]) activate(cons jetstream.Consumer, pin string, md *jetstream.MsgMetadata) error {
	d := f.durable
	ctx, cancel := context.WithTimeout(f.ctx, resumeTimeout)
	info, err := cons.Info(ctx)
	cancel()
	if err != nil {
		return err
	}
	d.pin = pin
	floor := info.AckFloor.Stream
	// Another reader's values: this one neither reads them nor counts
	// them as gaps.
	f.skipTo(floor)
	// What was delivered before this reader's first message: fresh
	// deliveries go in stream order, so up to the one before it.
	if md.NumDelivered == 1 {
		d.redeliverTo = max(d.redeliverTo, md.Sequence.Stream-1)
	} else {
		d.redeliverTo = max(d.redeliverTo, info.Delivered.Stream)
	}
	if md.Sequence.Stream == floor+1 && info.Delivered.Stream == md.Sequence.Stream {
		return nil // nothing beyond the position but this message
	}
	return f.reset(cons)
}

// reset puts the consumer back at its acknowledged position; deliveries
// this reader gets that were made before it are dropped.
func (f *feed[T]) reset(jetstream.Consumer) error {
	ctx, cancel := context.WithTimeout(f.ctx, resumeTimeout)
	defer cancel()
	if err := f.resetTo(ctx); err != nil {
		return err
	}
	d := f.durable
	d.syncing = true
	d.epoch++
	return nil
}

// resetTo asks the server to put the consumer back at its acknowledged
// position: the next value it delivers is the one after it.
func (f *feed[T]) resetTo(ctx context.Context) error {
	if _, err := f.t.js.ResetConsumer(ctx, f.t.streamID, f.durable.name); err != nil {
		return fmt.Errorf("natsbridge: topic %q: reset durable %q: %w", f.t.name, f.durable.name, err)
	}
	return nil
}

// skipTo moves the feed past the values up to seq, which another reader
// read: they are neither handed out nor counted as gaps.
func (f *feed[T]) skipTo(seq uint64) {
	for {
		n := f.next.Load()
		if n > seq || f.next.CompareAndSwap(n, seq+1) {
			break
		}
	}
	f.advance(seq)
}

// checkDurable asks the server about an idle durable consumer: whether
// this reader still holds its turn (another took it when this one sent
// nothing for the takeover time), and whether a delivery was lost on the
// way.
func (f *feed[T]) checkDurable(cons jetstream.Consumer, delivered uint64) error {
	d := f.durable
	ctx, cancel := context.WithTimeout(f.ctx, resumeTimeout)
	defer cancel()
	info, err := cons.Info(ctx)
	if err != nil {
		return err
	}
	pinned := ""
	for _, g := range info.PriorityGroups {
		if g.Group == durableGroup {
			pinned = g.PinnedClientID
		}
	}
	if d.pin == "" || pinned != d.pin {
		d.pin = "" // standing by: the next message under a pin says when it is active again
		if pinned == "" && info.NumAckPending > 0 {
			// Nobody reads (the active reader died and its turn ran out)
			// and values it was given wait for acks that will not come:
			// make them deliverable again, so that a standby gets them.
			return f.resetTo(ctx)
		}
		return nil
	}
	if d.syncing {
		return nil
	}
	if info.Delivered.Consumer > delivered {
		return f.reset(cons)
	}
	return nil
}

// ackRead acknowledges the last value the application read, if it was not
// acknowledged, when ackBatch values or ackEvery have passed (or force),
// with its message (and so every value before it). A value read before a reset is not
// acknowledged with its own message: the server numbers deliveries anew
// from a reset, and a later value acknowledges it.
func (f *feed[T]) ackRead(force bool) {
	d := f.durable
	m := d.lastRead.Load()
	if m == nil || m.seq <= d.acked || m.epoch != d.epoch {
		return
	}
	if !force && m.seq-d.acked < ackBatch && time.Since(d.ackedAt) < ackEvery {
		return
	}
	if err := m.msg.Ack(); err == nil {
		d.acked, d.ackedAt = m.seq, time.Now()
	}
}

// finishDurable acknowledges what the application read, waiting for the
// server's answer (bounded by ctx), and gives up this reader's turn so
// that a standby takes over at once. The feed goroutine has exited.
func (f *feed[T]) finishDurable(ctx context.Context) {
	d := f.durable
	if m := d.lastRead.Load(); m != nil && m.seq > d.acked && m.epoch == d.epoch {
		if err := m.msg.DoubleAck(ctx); err != nil {
			f.log.Warn("natsbridge: durable position not saved at Stop: the values after it come again", slog.Uint64("seq", m.seq), errAttr(err))
		} else {
			d.acked = m.seq
		}
	}
	if d.pin != "" && f.t.js.Conn().IsConnected() {
		// Hand over at once: what this reader fetched and its
		// application did not read is delivered again, to the next
		// reader.
		_ = f.resetTo(ctx)
		_ = f.t.stream.UnpinConsumer(ctx, d.name, durableGroup)
	}
}
