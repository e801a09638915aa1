package natsbridge

import (
	"context"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A durable watcher's values from the moment they are handed to the
// application until the server has their acknowledgement.
//
// Values are handed out in stream order, one at a time (see
// Watcher.takeDurable), and each stays outstanding until the application
// is done with it: its All loop body returned, the next Next call came, or
// Done named its sequence. Values finish in any order; the watcher
// acknowledges only the contiguous prefix (AckAll up to the floor: the
// highest sequence at or below which every value handed out is done), so
// that a crash sends again only what was not finished.

// ackRef says how to acknowledge a value: its message, and the epoch of the
// consumer's delivery numbering it came in (see durable.epoch). A message
// of an earlier epoch cannot acknowledge: the server numbers deliveries
// anew from a reset, and an ack carries its delivery's number.
type ackRef struct {
	msg   jetstream.Msg
	epoch uint64
}

// outValue is a value handed out and not yet below the floor.
type outValue struct {
	seq  uint64
	done bool
	ref  ackRef
}

// handedSet is the set of values handed out and not yet below the floor,
// in stream order, and the floor itself. Its zero value is empty, with the
// floor at 0. It is not safe for concurrent use: acks guards it.
type handedSet struct {
	out   []outValue // out[head:] ascending by seq; out[:head] popped
	head  int
	top   uint64 // the highest sequence handed out
	open  int    // values in out not yet done
	floor uint64 // every value handed out up to floor is done
	ref   ackRef // the message of the highest done value at or below floor
}

// add records that the value at seq, above every value added before, was
// handed out; done adds it done already (a value the reader skips: a
// poison message read with All or Next).
func (s *handedSet) add(seq uint64, ref ackRef, done bool) {
	s.top = seq
	if s.head == len(s.out) && done {
		s.floor, s.ref = seq, ref
		return
	}
	if s.head == len(s.out) {
		s.out, s.head = s.out[:0], 0 // empty: start again at the front
	} else if s.head > len(s.out)/2 && len(s.out) == cap(s.out) {
		n := copy(s.out, s.out[s.head:]) // more popped than held: compact
		clear(s.out[n:])
		s.out, s.head = s.out[:n], 0
	}
	s.out = append(s.out, outValue{seq: seq, done: done, ref: ref})
	if !done {
		s.open++
	}
	s.advance()
}

// markDone records that the value at seq is done. It reports false if no
// value handed out and not yet done has that sequence (done already, or
// never handed out).
func (s *handedSet) markDone(seq uint64) bool {
	live := s.out[s.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i].seq >= seq })
	if i == len(live) || live[i].seq != seq || live[i].done {
		return false
	}
	live[i].done = true
	s.open--
	s.advance()
	return true
}

// advance moves the floor past the done values at the front.
func (s *handedSet) advance() {
	for s.head < len(s.out) && s.out[s.head].done {
		v := s.out[s.head]
		s.out[s.head] = outValue{} // no reference kept to its message
		s.head++
		s.floor, s.ref = v.seq, v.ref
	}
	if s.head == len(s.out) {
		s.floor = max(s.floor, s.top)
	}
}

// acks acknowledges a durable watcher's done values to the server, in
// batches: once ackBatch values are done past the last ack, or ackEvery
// after it, and when the watcher ends (flush). It is safe for concurrent
// use: the application's goroutines mark values done, the feed and the
// keeper flush.
type acks struct {
	nc    *nats.Conn // sends the acks
	mu    sync.Mutex // guards set, acked, ackedAt, idle, ever
	set   handedSet
	acked uint64 // the stream sequence acknowledged last
	// ever is the highest sequence handed out in any turn (a new turn
	// starts set again at the position's floor).
	ever uint64
	// ackedAt is when the last ack was sent, or when the floor last
	// moved from acked (a batch's age counts from its first value).
	ackedAt time.Time
	// epoch counts the consumer's resets; the feed stamps each message
	// with the epoch it came in.
	epoch atomic.Uint64
	// eager is the sequence up to which every done value is acknowledged
	// at once, not in a batch (see keeper.activate).
	eager uint64
	// idle, made when someone waits for it (outstanding), is closed and
	// cleared when the last outstanding value is done.
	idle chan struct{}
	// turn counts this reader's takeovers of the position (see newTurn):
	// the values handed out in an earlier turn are void. Written under mu
	// (with the set it numbers), read without it by turnNow.
	turn atomic.Uint64
}

func newAcks(nc *nats.Conn) *acks { return &acks{nc: nc} }

// hand records that the value at seq, delivered in its message msg in
// the consumer's epoch, was handed out (done: skipped, a poison message
// that All and Next pass over). seq is above every sequence handed out
// before.
func (a *acks) hand(seq uint64, msg jetstream.Msg, epoch uint64, done bool) (turn uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.set.add(seq, ackRef{msg: msg, epoch: epoch}, done)
	a.ever = max(a.ever, seq)
	return a.turn.Load()
}

// handedEver returns the highest sequence handed out in any turn.
func (a *acks) handedEver() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ever
}

// newTurn begins a turn: this reader took the position over, and another
// reader may have had it since the values outstanding were handed out.
// Those are void: they are forgotten (their Done, with their turn, is
// ignored), and the set starts again at floor, the position's
// acknowledged floor, after which every value comes again.
func (a *acks) newTurn(floor uint64) {
	a.endTurn(func(handedSet) handedSet { return handedSet{floor: floor, top: floor} })
}

// voidTurn ends the turn without a new one: the reader stopped while
// fenced. The values outstanding are forgotten (their Done is ignored);
// the floor, and its message for a last acknowledgement, stay.
func (a *acks) voidTurn() {
	a.endTurn(func(s handedSet) handedSet { return handedSet{floor: s.floor, top: s.floor, ref: s.ref} })
}

// endTurn raises the turn and, if values are outstanding, forgets them:
// the set becomes fresh(set), and those waiting for the last outstanding
// value are released.
func (a *acks) endTurn(fresh func(handedSet) handedSet) {
	a.mu.Lock()
	a.turn.Store(turns.Add(1))
	var idle chan struct{}
	if a.set.open > 0 {
		a.set = fresh(a.set)
		a.acked = min(a.acked, a.set.floor)
		idle, a.idle = a.idle, nil
	}
	a.mu.Unlock()
	if idle != nil {
		close(idle)
	}
}

// turns numbers the turns of every durable watcher of the process, so
// that no two share one (a group member reads a partition it had before
// with a new watcher).
var turns atomic.Uint64

// turnNow returns the current turn: a Pool asks it before each attempt
// (see keeper.holds), without the lock the hand-outs and Dones take.
func (a *acks) turnNow() uint64 { return a.turn.Load() }

// refresh records msg, a delivery of the value at seq in the consumer's
// epoch after a reset, for a value handed out before it: the value (or
// the floor, if it is the floor's) is acknowledged with it from then on,
// since a message of an earlier epoch cannot acknowledge.
func (a *acks) refresh(seq uint64, msg jetstream.Msg, epoch uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := &a.set
	ref := ackRef{msg: msg, epoch: epoch}
	if seq == s.floor && s.ref.epoch < epoch {
		s.ref = ref
		return
	}
	live := s.out[s.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i].seq >= seq })
	if i < len(live) && live[i].seq == seq && live[i].ref.epoch < epoch {
		live[i].ref = ref
	}
}

// anyTurn, as doneTurn's turn, marks a value done whatever its turn (a
// Done without one: see Watcher.Done).
const anyTurn = math.MaxUint64

// doneTurn marks the value at seq, handed out in turn, done and
// acknowledges the floor if a batch is due; within the eager range (see
// keeper.activate), it waits for the server to confirm the ack. It
// reports false if seq names no value outstanding, or if turn is over (a
// value of the turn before a takeover: see newTurn).
func (a *acks) doneTurn(seq, turn uint64) bool {
	a.mu.Lock()
	if turn != anyTurn && turn != a.turn.Load() {
		a.mu.Unlock()
		return false
	}
	ok := a.set.markDone(seq)
	ref, due := a.dueLocked(time.Now(), false)
	confirm := due && seq <= a.eager
	var idle chan struct{}
	if ok && a.set.open == 0 && a.idle != nil && !confirm {
		idle, a.idle = a.idle, nil
	}
	a.mu.Unlock()
	switch {
	case confirm:
		ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
		_, _ = a.nc.RequestWithContext(ctx, ref.msg.Reply(), ackBody)
		cancel()
		a.mu.Lock()
		if a.set.open == 0 && a.idle != nil {
			idle, a.idle = a.idle, nil
		}
		a.mu.Unlock()
	case due:
		a.send(ref)
	}
	if idle != nil {
		close(idle)
	}
	return ok
}

// inEager reports whether seq is in the eager range: handed out one at a
// time, each acknowledged before the next (see keeper.activate).
func (a *acks) inEager(seq uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return seq <= a.eager
}

// flush acknowledges the floor if it passed the last ack and ackEvery has
// gone by (or force).
func (a *acks) flush(force bool) {
	a.mu.Lock()
	ref, due := a.dueLocked(time.Now(), force)
	a.mu.Unlock()
	if due {
		a.send(ref)
	}
}

// dueLocked returns the floor's message and reports whether to send it
// now, recording it as acknowledged if so. A floor whose message came in
// an earlier epoch waits for a later value to carry its ack.
func (a *acks) dueLocked(now time.Time, force bool) (ackRef, bool) {
	s := &a.set
	if s.ref.msg == nil || s.floor <= a.acked || s.ref.epoch != a.epoch.Load() {
		return ackRef{}, false
	}
	if !force && s.floor > a.eager && s.floor-a.acked < ackBatch && now.Sub(a.ackedAt) < ackEvery {
		return ackRef{}, false
	}
	a.acked, a.ackedAt = s.floor, now
	return s.ref, true
}

// ackBody is an acknowledgement's body.
var ackBody = []byte("+ACK")

// send acknowledges ref's message, and so every value before it (AckAll).
// A lost ack is sent again with a later one, or at the end (finalAck).
// It publishes to the message's reply subject itself: the client lets a
// message be acknowledged once, and finalAck may acknowledge it again,
// waiting for the server's answer.
func (a *acks) send(ref ackRef) { _ = a.nc.Publish(ref.msg.Reply(), ackBody) }

// finalAck acknowledges the floor and waits for the server to confirm it,
// bounded by ctx. It returns the floor's sequence, and an error if the
// confirmation did not come.
func (a *acks) finalAck(ctx context.Context) (uint64, error) {
	a.mu.Lock()
	s := &a.set
	floor, ref := s.floor, s.ref
	ok := ref.msg != nil && ref.epoch == a.epoch.Load()
	a.mu.Unlock()
	if !ok {
		return floor, nil // nothing of this epoch to acknowledge
	}
	if _, err := a.nc.RequestWithContext(ctx, ref.msg.Reply(), ackBody); err != nil {
		return floor, err
	}
	a.mu.Lock()
	a.acked = max(a.acked, floor)
	a.mu.Unlock()
	return floor, nil
}

// outstanding returns the number of values handed out and not yet done,
// and, if it is not zero, a channel closed when it next falls to zero.
func (a *acks) outstanding() (int, <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.set.open == 0 {
		return 0, nil
	}
	if a.idle == nil {
		a.idle = make(chan struct{})
	}
	return a.set.open, a.idle
}

// eagerTo makes every done value up to seq acknowledged at once.
func (a *acks) eagerTo(seq uint64) {
	a.mu.Lock()
	a.eager = max(a.eager, seq)
	a.mu.Unlock()
}

// state returns the number of values outstanding and the sequence
// acknowledged last.
func (a *acks) state() (int, uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.set.open, a.acked
}

// newEpoch records that the consumer was reset: the messages handed out
// before cannot acknowledge any more.
func (a *acks) newEpoch() { a.epoch.Add(1) }

// top returns the highest sequence handed out.
func (a *acks) top() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.set.top
}
