package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Whose turn it is: the server pins a durable consumer to one reader at a
// time, and a reset or an unpin acts on whoever it pins. A reader asks
// (and renews its pin) before it touches the position, and drops what
// came under a pin the server gave away.

// errPinNotServed: a message came under a pin the server no longer serves
// (see activate).
var errPinNotServed = errors.New("natsbridge: delivered under a pin the server no longer serves")

// activate makes this reader the active one, under pin, at the message
// described by md, the first under that pin. It takes over the position's
// record (see keeper.activate) and its acknowledged position. If another
// reader held the position meanwhile, what this one still held is handed
// back and it reads again from the acknowledged position; if this reader
// was fenced and no other held the position, it reads again from the
// first value it held back; if anything was delivered beyond where it
// reads on, the consumer goes back to its acknowledged position (reset),
// so that the values after it come again, in order.
//
// A message delivered under a pin the server has given away since (this
// reader gave its turn up when its lease ran out, or the server served
// another reader when this one went silent, and the message waited in the
// client meanwhile) makes nothing active: it returns errPinNotServed, and
// the reader drops what comes under that pin. Taking the record over and
// resetting then would put the reader the server serves out of its turn,
// losing it the acknowledgements of what it did, which the next reader
// would read again.
func (f *feed[T]) activate(cons jetstream.Consumer, pin string, md delivery) error {
	d := f.durable
	ctx, cancel := context.WithTimeout(f.g.Stopping(), resumeTimeout)
	defer cancel()
	info, err := cons.Info(ctx)
	if err != nil {
		return err
	}
	switch pinned, known := pinnedIn(info); {
	case !known:
		// An answer without the consumer's priority group: a node of a
		// cluster that has the consumer and no state of it yet answered.
		return fmt.Errorf("natsbridge: topic %q: durable %q: the server's answer names no reader: asking again", f.t.name, d.name)
	case pinned != pin:
		return errPinNotServed
	}
	handed, how, err := d.keep.activate(ctx, info.AckFloor.Stream, info.Delivered.Stream)
	if err != nil {
		return err
	}
	d.pin = pin
	d.keep.setPin(pin)
	floor := info.AckFloor.Stream
	switch how {
	case tookOver:
		// Another reader held the position since this one last did: what
		// this one holds may be read by the other, or come again. Read
		// on from the acknowledged position; the values after it that
		// another reader may have handed out count as redelivered.
		f.dest.discard()
		f.rewind(floor + 1)
		f.rewound = true
		d.countRedeliveredTo(handed)
	case resumed:
		return f.resume(cons, floor)
	default:
		// Values up to the floor another reader read: this one neither
		// reads them nor counts them as gaps.
		f.skipTo(floor)
	}
	if md.stream == floor+1 && info.Delivered.Stream == md.stream {
		return nil // nothing beyond the position but this message
	}
	return f.reset(cons)
}

// lostTurn is a pin a reader lost its turn under (see lostDelivery and
// activate), and when it found so.
type lostTurn struct {
	pin string
	at  time.Time
}

func (l *lostTurn) set(pin string) { l.pin, l.at = pin, time.Now() }

// drops reports whether msg came under the lost pin, to be dropped: for
// every after the reader found so; then messages still coming under it
// make the reader ask the server again (its answer may have been wrong,
// and the reader would otherwise drop its own turn's messages for good).
func (l *lostTurn) drops(msg jetstream.Msg, every time.Duration) bool {
	if l.pin == "" || pinOf(msg) != l.pin {
		return false
	}
	if time.Since(l.at) < every {
		return true
	}
	l.pin = ""
	return false
}

// pinnedOf returns the pin under which the durable consumer described by
// info serves a reader, "" if it serves none.
func pinnedOf(info *jetstream.ConsumerInfo) string {
	pin, _ := pinnedIn(info)
	return pin
}

// pinnedIn is pinnedOf, and reports whether info describes the consumer's
// priority group at all.
func pinnedIn(info *jetstream.ConsumerInfo) (pin string, known bool) {
	for _, g := range info.PriorityGroups {
		if g.Group == durableGroup {
			return g.PinnedClientID, true
		}
	}
	return "", false
}

// standbyResets reports whether a standby that found the durable consumer
// as info describes puts it back at its acknowledged position: when
// nobody reads (the active reader died and its turn ran out) and values
// it was given wait for acks that will not come, and no value waits to
// be delivered. The reset makes them deliverable again, so that a
// standby gets them; the position's record says which of them may have
// been handed out (see activate). With values still to deliver the
// server serves a standby's request itself, and that reader resets as it
// takes over: a reset from a standby could land after that takeover, on
// the new reader's read (see Watcher.handBack).
func standbyResets(info *jetstream.ConsumerInfo) bool {
	return pinnedOf(info) == "" && info.NumAckPending > 0 && info.NumPending == 0
}

// pingPin sends the durable consumer whose pull requests go to next a
// request under pin that can take no message: if the server serves pin,
// that renews it for the takeover time (the consumer's PinnedTTL). It
// reports false if the server answered that it serves another pin (a
// 423), true for any other answer: with no pin served, or the consumer's
// leader changing, it may be no pin at all, so a caller that acts on it
// asks whose the pin is too (see servesPin).
func pingPin(ctx context.Context, nc *nats.Conn, next, pin string) (bool, error) {
	body := fmt.Sprintf(`{"batch":1,"max_bytes":1,"no_wait":true,"group":%q,"id":%q}`, durableGroup, pin)
	msg, err := nc.RequestWithContext(ctx, next, []byte(body))
	if err != nil {
		return false, err
	}
	return msg.Header.Get("Status") != "423", nil
}

// pinnedNow returns the pin under which the durable consumer serves a
// reader now, "" if it serves none.
func (t *Topic[T]) pinnedNow(ctx context.Context, durable string) (string, error) {
	cons, err := t.stream.Consumer(ctx, durable)
	if err != nil {
		return "", err
	}
	return pinnedOf(cons.CachedInfo()), nil
}

// nextSubject returns the subject of the pull requests of the durable
// consumer named durable.
func (t *Topic[T]) nextSubject(durable string) string {
	return "$JS.API.CONSUMER.MSG.NEXT." + t.streamID + "." + durable
}

// servesPin reports whether the durable consumer serves a reader under
// pin, renewing the pin for the takeover time first if it does: so the
// reset or unpin a reader then asks for lands under its own pin, as long
// as the consumer's leader does not change meanwhile (a new leader
// forgets the pin, and pins the next request, perhaps another reader's).
func (t *Topic[T]) servesPin(ctx context.Context, durable, pin string) (bool, error) {
	mine, err := pingPin(ctx, t.js.Conn(), t.nextSubject(durable), pin)
	if err != nil || !mine {
		return false, err
	}
	now, err := t.pinnedNow(ctx, durable)
	return err == nil && now == pin, err
}

// unpinIf makes the durable consumer forget pin, if it still serves a
// reader under it (see servesPin). A reader gives up its own turn only:
// the server may have served another reader since (its pin ran out, or
// another reader unpinned it), and unpinning that one would put it out of
// its turn in the middle of its read, the next reader taking over from
// the last value it acknowledged.
func (t *Topic[T]) unpinIf(ctx context.Context, durable, pin string) error {
	if ok, err := t.servesPin(ctx, durable, pin); !ok {
		return err
	}
	return t.stream.UnpinConsumer(ctx, durable, durableGroup)
}

// leaseRanOut fences this reader if its lease ran out before the keeper
// noticed (its process was stopped past the lease's end and goes on: the
// keeper's next check may come after a hand-out, when another reader
// has taken over), as the keeper would, and reports whether it did. The
// keeper gives the turn up at its next check.
func (k *keeper) leaseRanOut() bool {
	if time.Now().UnixNano() < k.fenceBy.Load() {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case k.fenced.Load():
		return true
	case !k.owned:
		k.fenceBy.Store(math.MaxInt64)
		return false
	case beforeOnBothClocks(time.Now(), k.fenceAt()): // renewed meanwhile
		return false
	}
	k.fenceLocked("lease ran out before it was renewed (the process paused?)")
	k.turnGivenUpLocked()
	return true
}

// beforeOnBothClocks reports whether now is before t on the wall clock
// and, if both carry one, on the monotonic clock: a pause that one clock
// counted and the other skipped (a host suspended) still ends the lease,
// as the next reader judges it by the wall clock.
func beforeOnBothClocks(now, t time.Time) bool {
	return now.Before(t) && now.UnixNano() < t.UnixNano()
}

// countRedeliveredTo counts the values up to handed, the mark of the
// record a takeover wrote, as redelivered when they come again: that mark
// is at least what this reader handed out itself, in any turn (see
// keeper.worstLocked).
func (d *durable) countRedeliveredTo(handed uint64) {
	for {
		r := d.redeliverTo.Load()
		if handed <= r || d.redeliverTo.CompareAndSwap(r, handed) {
			return
		}
	}
}
