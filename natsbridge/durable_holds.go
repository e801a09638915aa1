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
// out (stopped: a Shutdown, a partition moving to another member), it
// holds the values of its turn, as before it was fenced: its hand-over
// waits for them to be done, or for its bound.
func (k *keeper) holds(turn uint64) (handle.Holding, <-chan struct{}) {
	for {
		if turn != k.acks.turnNow() {
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

// Holds reports, for a handle.Pool (a handle.TurnSource), whether this
// reader holds the value at seq it handed out in turn (Delivery.Turn): a
// durable reader whose lease ran out (its process paused past it) is
// fenced until it resumes its position or another reader takes it over,
// and the values it handed out before a takeover of its own are void
// (another reader had the position: they came, or come, to it). A Pool
// begins no value its reader does not hold. A watcher that is not durable
// holds every value.
func (w *Watcher[T]) Holds(seq, turn uint64) (handle.Holding, <-chan struct{}) {
	if w.d == nil {
		return handle.Held, nil
	}
	return w.d.keep.holds(turn)
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
