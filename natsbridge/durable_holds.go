package natsbridge

import "github.com/heraldgo/herald/handle"

// A durable watcher's turns, for a handle.Pool (a handle.TurnSource): a
// Pool holds values it received and has not begun (waiting behind their
// keys), and asks, before each attempt, whether the reader still holds
// the value. A reader whose lease ran out (its process paused past it) is
// fenced until it resumes its position or another reader takes it over;
// the values it handed out before a takeover of its own (a new turn:
// acks.newTurn) were another reader's since, and are void. A hand-out
// carries its turn (Delivery.Turn), and DoneTurn ignores a value of a turn
// that is over, whose sequence may have been handed out again since.

// fenceChangedLocked wakes those waiting for the fence to end (see
// holds); closeReads calls it without mu.
func (k *keeper) fenceChangedLocked() {
	if c := k.fenceChange.Swap(nil); c != nil {
		close(*c)
	}
}

// fenceWait returns the channel fenceChangedLocked closes next.
func (k *keeper) fenceWait() <-chan struct{} {
	for {
		if c := k.fenceChange.Load(); c != nil {
			return *c
		}
		c := make(chan struct{})
		if k.fenceChange.CompareAndSwap(nil, &c) {
			return c
		}
	}
}

// holds reports whether this reader holds the values it handed out in
// turn (see handle.TurnSource): not if a later turn began, and not yet
// if it is fenced (its lease ran out, as a hand-out checks), with a
// channel closed when the fence ends. Once the watcher hands nothing more
// out (stopped: a Shutdown, a partition moving to another member), a
// reader that owned the position when it stopped holds the values of its
// turn (its hand-over waits for them to be done, or for its bound); a
// fenced one, or one whose lease had run out then, will not resume, and
// its turn ends (see voidClosedTurn).
func (k *keeper) holds(turn uint64) (handle.Holding, <-chan struct{}) {
	for {
		if turn != k.acks.turnNow() {
			return handle.Void, nil
		}
		if k.closed.Load() && (k.fenced.Load() || k.fenceBy.Load() < k.closedAt.Load()) {
			// Fenced, or its lease had run out when it stopped (its process
			// paused past it): it will not resume. A lease that runs out
			// after the stop (renewals end with it) does not count: the
			// hand-over of a reader that stopped while it owned its
			// position waits for its values.
			k.voidClosedTurn()
			return handle.Void, nil
		}
		if k.closed.Load() || !k.fenced.Load() && !k.leaseRanOut() {
			if turn != k.acks.turnNow() { // a takeover raises the turn before it unfences
				return handle.Void, nil
			}
			return handle.Held, nil
		}
		c := k.fenceWait()
		if !k.fenced.Load() || k.closed.Load() {
			continue // unfenced or closed meanwhile: look again
		}
		if turn != k.acks.turnNow() {
			return handle.Void, nil
		}
		return handle.Fenced, c
	}
}

// voidClosedTurn ends the turn of a reader stopped while fenced, once:
// the values it handed out are another reader's (they come again to the
// next one, unacknowledged), and its hand-over no longer waits for them.
func (k *keeper) voidClosedTurn() {
	if k.closedVoid.CompareAndSwap(false, true) {
		k.acks.voidTurn()
	}
}

// takenLocked ends this reader's turn when its record names another
// owner: it will not resume (a resume needs the record to name it), so
// the values it handed out are the next owner's, and a Pool waiting for
// its fence to end gives them up now, rather than for as long as this
// reader stands by.
func (k *keeper) takenLocked() {
	k.acks.voidTurn()
	k.fenceChangedLocked()
}

// Holds reports, for a handle.Pool (a handle.TurnSource), whether this
// reader holds the value at seq it handed out in turn (Delivery.Turn): a
// durable reader whose lease ran out (its process paused past it) is
// fenced until it resumes its position or another reader takes it over,
// and the values it handed out before a takeover of its own are void
// (another reader had the position: they came, or come, to it). A Pool
// begins no value its reader does not hold. Once the watcher has handed
// its position over (stopped, and its values done or its bound passed),
// or was stopped while fenced, it holds none. A watcher that is not
// durable holds every value.
func (w *Watcher[T]) Holds(seq, turn uint64) (handle.Holding, <-chan struct{}) {
	d := w.d
	if d == nil {
		return handle.Held, nil
	}
	select {
	case <-d.finished:
		return handle.Void, nil // handed over: the next reader has them
	default:
	}
	h, c := d.keep.holds(turn)
	if h == handle.Void && d.ending.Load() {
		if n, _ := d.acks.outstanding(); n == 0 {
			w.finish() // nothing left to wait for
		}
	}
	return h, c
}

// DoneTurn is Done for the value at seq handed out in turn: it does
// nothing if that turn is over (the same seq may have been handed out
// again since, in a later turn).
func (w *Watcher[T]) DoneTurn(seq, turn uint64) {
	if w.d != nil && w.d.acks.doneTurn(seq, turn) && w.d.ending.Load() {
		if n, _ := w.d.acks.outstanding(); n == 0 {
			w.finish()
		}
	}
}
