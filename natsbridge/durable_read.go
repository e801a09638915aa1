package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The feed's read loop for a durable consumer (see durable.go): which
// reader is active, the resets that put the consumer back at its
// acknowledged position, and the acknowledgements of what was read.

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
	d.keep.setPin("")
	return cons, it, nil
}

// consumeDurable hands out the messages of the durable consumer until it
// fails. When no message comes for a while (a heartbeat; a standby, which
// is the one to notice that the active reader died, looks at least twice
// per takeover time) it asks the server about the consumer (see
// checkDurable). The keeper acknowledges what is done as time passes.
func (f *feed[T]) consumeDurable(it jetstream.MessagesContext, cons jetstream.Consumer) error {
	var delivered uint64 // the consumer's delivery sequence, since the last reset
	var lost lostTurn
	idle := newIdleClock(f.g.Stopping(), min(f.t.heartbeat, f.durable.takeover/2))
	defer idle.stop()
	for {
		msg, err := it.Next(idle.wait...)
		if idle.passed(err) {
			if err := f.checkDurable(cons, delivered, &lost); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		idle.tick()
		md, ok := parseDelivery(msg.Reply())
		if !ok {
			return fmt.Errorf("natsbridge: topic %q: not a stream's message: %q", f.t.name, msg.Reply())
		}
		if lost.drops(msg, f.durable.takeover/2) {
			continue // delivered to it before the server served another
		}
		skip, err := f.follow(cons, msg, md, &delivered, &lost)
		if err != nil {
			return err
		}
		if skip {
			continue
		}
		if md.consumer != delivered+1 {
			// A delivery lost on the way: from the last one acknowledged
			// again (what this reader handled it drops), if this reader
			// still has its turn.
			inTurn, err := f.lostDelivery(cons)
			if err != nil {
				return err
			}
			if !inTurn {
				lost.set(f.durable.pin)
			}
			continue
		}
		delivered = md.consumer
		if err := f.handleDurable(md, msg); err != nil {
			return err
		}
	}
}

// follow reads the pin of msg, whose delivery is md: a message under a
// new pin makes this reader the active one, unless the server no longer
// serves that pin (then lost records it). It reports whether to drop msg
// (it comes again after a reset, or was delivered before one), and moves
// delivered where counting starts anew.
func (f *feed[T]) follow(cons jetstream.Consumer, msg jetstream.Msg, md delivery, delivered *uint64, lost *lostTurn) (skip bool, err error) {
	d := f.durable
	if pin := pinOf(msg); pin != d.pin {
		// This reader is the active one now.
		switch err := f.activate(cons, pin, md); {
		case errors.Is(err, errPinNotServed):
			lost.set(pin) // delivered under a turn the server gave away since
			return true, nil
		case err != nil:
			return false, err
		}
		if d.syncing {
			return true, nil // the message comes again after the reset
		}
		*delivered = md.consumer - 1
	}
	if d.syncing {
		if md.consumer != 1 {
			return true, nil // delivered before the reset
		}
		d.syncing, *delivered = false, 0
	}
	return false, nil
}

// pinOf returns the pin a message of the durable consumer went out under,
// read without canonicalising the header's name (the server writes it
// so).
func pinOf(msg jetstream.Msg) string {
	if v := msg.Headers()[pinHeader]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// pinHeader carries, on each message, the pin of the reader it went to.
const pinHeader = "Nats-Pin-Id"

// handleDurable places one message of the durable consumer in the
// watcher's queue.
func (f *feed[T]) handleDurable(md delivery, msg jetstream.Msg) error {
	if !f.take(md.stream) {
		// Handed out already (it comes again after a reset): its message,
		// of this epoch, can acknowledge it.
		f.durable.acks.refresh(md.stream, msg, f.durable.acks.epoch.Load())
		return nil
	}
	return f.deliver(md.stream, msg, int(md.count))
}

// resume makes a reader that was fenced, and that resumed the record (see
// keeper.activate), read on at the position whose floor is floor. It
// handed out the values it took before it was fenced, and none after;
// no other reader handed out any. What it handed out stays with its
// application; from the first value it did not hand out (refused while
// fenced, held back in its queue, or not yet read), the values come
// again, after a reset.
func (f *feed[T]) resume(cons jetstream.Consumer, floor uint64) error {
	d := f.durable
	from := f.next.Load()
	if first := f.dest.discard(); first != 0 {
		from = min(from, first)
	}
	f.rewind(max(d.keep.resumeAt(from), floor+1))
	f.rewound = true
	if err := f.reset(cons); err != nil {
		return err
	}
	d.keep.unfence()
	return nil
}

// reset puts the consumer back at its acknowledged position, once the
// values done are acknowledged (the server confirming it), so that only
// what was not done comes again; deliveries this reader gets that were
// made before it are dropped. After a rewind of the feed, the values its
// queue held from before it, at or after the feed's position, are dropped
// too (see durable.stale).
func (f *feed[T]) reset(jetstream.Consumer) error {
	ctx, cancel := context.WithTimeout(f.g.Stopping(), resumeTimeout)
	defer cancel()
	if _, err := f.durable.acks.finalAck(ctx); err != nil {
		return err
	}
	at, err := f.resetTo(ctx)
	if err != nil {
		return err
	}
	d := f.durable
	d.syncing = true
	d.acks.newEpoch()
	if f.rewound {
		d.rewound.Store(&rewind{from: f.next.Load(), epoch: d.acks.epoch.Load()})
		f.rewound = false
	}
	f.skipAcknowledged(ctx, at)
	return nil
}

// skipAcknowledged moves the feed past the values before at, the first
// the consumer delivers after a reset: a reader acknowledged them (this
// one with its last ack, or another meanwhile), so they are neither handed
// out again nor gaps; but those the stream no longer holds (removed after
// their delivery, before their ack: the server moves its ack floor past
// them) are gaps.
func (f *feed[T]) skipAcknowledged(ctx context.Context, at uint64) {
	n := f.next.Load()
	if at <= n {
		return
	}
	if info, err := f.t.streamState(ctx); err == nil && info.State.FirstSeq > n {
		f.countGaps(n, min(info.State.FirstSeq, at)-1)
	}
	f.skipTo(at - 1)
}

// resetTo asks the server to put the consumer back at its acknowledged
// position: it returns the sequence of the next value it delivers, the one
// after it.
func (f *feed[T]) resetTo(ctx context.Context) (uint64, error) {
	r, err := f.t.js.ResetConsumer(ctx, f.t.streamID, f.durable.name)
	if err != nil {
		return 0, fmt.Errorf("natsbridge: topic %q: reset durable %q: %w", f.t.name, f.durable.name, err)
	}
	return r.ResetSeq, nil
}

// rewind makes seq the next sequence the feed takes, also if it took
// later ones: they come again (see activate).
func (f *feed[T]) rewind(seq uint64) { f.next.Store(seq) }

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

// lostDelivery follows a delivery lost on the way to this reader: if it
// still has its turn (it is not fenced and the server pins it), it puts
// the consumer back at its acknowledged position (reset), and reports
// true. A reader that lost its turn resets nothing, and reports false: it
// drops what was delivered to it under that turn's pin, and a message
// under a pin of its own, or the idle check, says when it reads again. A
// reset would put back what the server delivered since to the reader it
// serves now, whose acknowledgements of those values the server would
// then drop, unanswered (an ack at or past the consumer's next delivery):
// that reader, handing values out one at a time after its takeover, would
// wait out each ack's timeout.
func (f *feed[T]) lostDelivery(cons jetstream.Consumer) (bool, error) {
	d := f.durable
	if d.keep.fenced.Load() {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(f.g.Stopping(), resumeTimeout)
	defer cancel()
	info, err := cons.Info(ctx)
	if err != nil {
		return false, err
	}
	if pinnedOf(info) != d.pin {
		return false, nil
	}
	return true, f.reset(cons)
}

// checkDurable asks the server about an idle durable consumer: whether
// this reader still holds its turn (another took it when this one sent
// nothing for the takeover time), whether a delivery was lost on the way,
// and whether the server serves the pin this reader found it did not (see
// lostTurn): the answer was wrong, and what the reader dropped under that
// pin waits for acknowledgements that will not come; put back, it comes
// again and makes this reader the active one.
func (f *feed[T]) checkDurable(cons jetstream.Consumer, delivered uint64, lost *lostTurn) error {
	d := f.durable
	ctx, cancel := context.WithTimeout(f.g.Stopping(), resumeTimeout)
	defer cancel()
	info, err := cons.Info(ctx)
	if err != nil {
		return err
	}
	pinned := pinnedOf(info)
	if d.pin == "" || pinned != d.pin {
		d.pin = "" // standing by: the next message under a pin says when it is active again
		d.keep.setPin("")
		if pinned != "" && pinned == lost.pin || standbyResets(info) {
			lost.pin = ""
			_, err := f.resetTo(ctx)
			return err
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
