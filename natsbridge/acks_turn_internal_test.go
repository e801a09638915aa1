package natsbridge

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/heraldgo/herald/handle"
)

// TestAcksNewTurnForgetsTheValuesOfTheTurnBefore: at a takeover of its
// own, a reader's values outstanding from its turn before are void: they
// no longer hold the floor back or its Shutdown's wait, the values after
// the floor are handed out again in order, and a Done of the turn before
// does not mark the same sequence of the new turn done.
func TestAcksNewTurnForgetsTheValuesOfTheTurnBefore(t *testing.T) {
	a := newAcks(nil)
	old := a.hand(5, nil, 0, false)
	a.hand(6, nil, 0, false)
	n, idle := a.outstanding()
	if n != 2 || idle == nil {
		t.Fatalf("outstanding() = %d, %v; want 2 and a channel", n, idle)
	}
	a.newTurn(3) // the other reader acknowledged up to 3
	select {
	case <-idle:
	default:
		t.Fatal("a Shutdown waiting for the values of the turn before still waits")
	}
	now := a.hand(4, nil, 0, false) // 4 comes again, in the new turn
	a.hand(5, nil, 0, false)
	if now == old {
		t.Fatalf("the turn is %d before and after a takeover", now)
	}
	if a.doneTurn(5, old) {
		t.Error("a Done of the turn before marked the new turn's 5 done")
	}
	if !a.doneTurn(4, now) || !a.doneTurn(5, now) {
		t.Fatal("the new turn's values could not be marked done")
	}
	if open, _ := a.state(); open != 0 || a.set.floor != 5 {
		t.Errorf("after both done: %d open, floor %d; want 0, 5", open, a.set.floor)
	}
}

// TestKeeperHoldsWaitsWhileFencedAndVoidsAnEndedTurn: holds reports a
// value of the current turn held, of a fenced reader fenced (with a
// channel closed when the fence ends), of an ended turn void, and of a
// watcher stopped while fenced void.
func TestKeeperHoldsWaitsWhileFencedAndVoidsAnEndedTurn(t *testing.T) {
	k := newKeeper(nil, "d", nil, "", 2*time.Second, newAcks(nil), newLimitedLog(slog.New(slog.NewTextHandler(io.Discard, nil))))
	turn := k.acks.hand(1, nil, 0, false)
	if h, _ := k.holds(turn); h != handle.Held {
		t.Fatalf("holds of the current turn = %v, want Held", h)
	}
	k.mu.Lock()
	k.fenceLocked("test")
	k.mu.Unlock()
	h, changed := k.holds(turn)
	if h != handle.Fenced || changed == nil {
		t.Fatalf("holds of a fenced reader = %v, %v; want Fenced and a channel", h, changed)
	}
	k.mu.Lock()
	k.acks.newTurn(0) // as ownLocked: a new turn, then the fence ends
	k.fenced.Store(false)
	k.fenceChangedLocked()
	k.mu.Unlock()
	select {
	case <-changed:
	default:
		t.Fatal("the fence ended and its channel is not closed")
	}
	if h, _ := k.holds(turn); h != handle.Void {
		t.Errorf("holds of the turn before a takeover = %v, want Void", h)
	}

	// Fenced again with a value out, then stopped: it will not resume, so
	// its turn ends, and its hand-over no longer waits for that value.
	turn = k.acks.hand(2, nil, 0, false)
	k.mu.Lock()
	k.fenceLocked("test")
	k.mu.Unlock()
	_, changed = k.holds(turn)
	_, idle := k.acks.outstanding()
	k.closeReads()
	select {
	case <-changed:
	default:
		t.Fatal("reads closed and the fence's channel is not closed")
	}
	if h, _ := k.holds(turn); h != handle.Void {
		t.Errorf("holds of a watcher stopped while fenced = %v, want Void", h)
	}
	select {
	case <-idle:
	default:
		t.Error("the hand-over of a watcher stopped while fenced still waits for its values")
	}
}

// TestKeeperHoldsAStoppedOwnersTurn: a watcher stopped while it owned its
// position holds the values of its turn, though its lease runs out after
// the stop (renewals end with it): its hand-over waits for them. One
// whose lease had run out before it stopped (its process paused past it)
// holds none.
func TestKeeperHoldsAStoppedOwnersTurn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		leaseTo time.Duration // the lease's end, from the stop
		want    handle.Holding
		open    int
	}{
		{"lease-ends-after-the-stop", time.Second, handle.Held, 1},
		{"lease-ended-before-the-stop", -time.Second, handle.Void, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKeeper(nil, "d", nil, "", 2*time.Second, newAcks(nil), newLimitedLog(slog.New(slog.NewTextHandler(io.Discard, nil))))
			turn := k.acks.hand(1, nil, 0, false)
			stopped := time.Now().Add(-2 * time.Second) // both leases over by now
			k.mu.Lock()
			k.owned = true
			k.fenceBy.Store(stopped.Add(tc.leaseTo).UnixNano())
			k.mu.Unlock()
			k.closeReads()
			k.closedAt.Store(stopped.UnixNano())
			if h, _ := k.holds(turn); h != tc.want {
				t.Errorf("holds of a stopped owner's turn = %v, want %v", h, tc.want)
			}
			if n, _ := k.acks.outstanding(); n != tc.open {
				t.Errorf("%d values outstanding, want %d", n, tc.open)
			}
		})
	}
}

// TestMemberHoldsNoneOfAPartitionItNoLongerReads: once a member's
// partition has moved away and its hand-over is over, a value of it still
// in the member's Pool is another member's: void, not begun here.
func TestMemberHoldsNoneOfAPartitionItNoLongerReads(t *testing.T) {
	var m Member[int] // reads no partition
	if h, _ := m.Holds(3<<seqBits|7, 1); h != handle.Void {
		t.Errorf("Holds of a partition the member no longer reads = %v, want Void", h)
	}
}

// TestAcksRememberWhatWasHandedOutInATurnBefore: a new turn starts the
// set again at the position's floor, but the highest value this reader
// ever handed out stays known: the values up to it that come again after
// its takeover are counted as redelivered, whatever the record says.
func TestAcksRememberWhatWasHandedOutInATurnBefore(t *testing.T) {
	a := newAcks(nil)
	a.hand(12, nil, 0, false)
	a.hand(13, nil, 0, true)
	a.newTurn(12) // the server acknowledged up to 12; 13's ack was not sent
	if top, ever := a.top(), a.handedEver(); top != 12 || ever != 13 {
		t.Errorf("after a new turn at 12: top %d, handedEver %d; want 12, 13", top, ever)
	}
}
