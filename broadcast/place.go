package broadcast

import (
	"slices"

	"github.com/heraldgo/herald/internal/ring"
	"github.com/heraldgo/herald/internal/wait"
)

// Placement: how the distributor puts values in a watcher's queue by the
// watcher's FullPolicy. A queue watcher's queue is a ring.Ring, with the
// values an All loop handed back in front of it; a channel watcher's queue
// is its channel.

// place puts what it can of vals in w's queue, by w's policy, and returns
// how many it consumed. When w is a full Block watcher, it also returns
// what to wait on: the channel to send the next value on, or the signal of
// a reader making room in the ring (or of Events making w a channel
// watcher).
func (b *Broadcaster[T]) place(w *Watcher[T], vals []T) (n int, send chan T, room <-chan struct{}) {
	w.mu.Lock()
	if w.writer.Parked() > 0 {
		w.writer.UnparkLocked() // back from a wait for room
	}
	if w.closed {
		w.mu.Unlock()
		return len(vals), nil, nil
	}
	if ch := w.ch; ch != nil {
		w.mu.Unlock()
		if n = b.sendAll(w, ch, vals); n < len(vals) {
			send = ch
		}
		return n, send, nil
	}
	n, added, dropped := w.placeLocked(vals)
	w.pushed += uint64(added)
	var reader chan struct{}
	if added > 0 {
		reader = w.readers.WakeLocked()
	}
	if n < len(vals) {
		room = w.writer.ParkLocked()
	}
	w.mu.Unlock()
	if reader != nil {
		wait.Signal(reader)
	}
	b.d.delivered += uint64(added)
	if dropped > 0 {
		b.drop(w, dropped, policyDrop(w.full))
	}
	return n, nil, room
}

// placeLocked adds vals to w's ring by w's policy, and returns what
// placeRing returns. The published values an All loop handed back to
// front count against the queue length as the ring's do: a Block or
// DropNewest watcher has that much less room, and a DropOldest watcher
// discards them first, as the oldest.
func (w *Watcher[T]) placeLocked(vals []T) (consumed, added, dropped int) {
	if w.back == 0 { // the usual case: no All loop ended early
		return placeRing(&w.queue, w.full, vals)
	}
	if w.full == DropOldest {
		dropped = w.discardBackLocked(w.back + w.queue.Len() + len(vals) - w.queue.Limit())
		if w.back == 0 {
			_, added, d := placeRing(&w.queue, DropOldest, vals)
			return len(vals), added, dropped + d
		}
		// What is left in front leaves room for every value of vals.
	}
	k := min(len(vals), max(w.queue.Free()-w.back, 0))
	w.queue.PushAll(vals[:k])
	if w.full == Block {
		return k, k, 0
	}
	return len(vals), k, dropped + len(vals) - k
}

// discardBackLocked discards up to n of the published values in front,
// oldest first, and returns how many it discarded. The prefix values ahead
// of them stay: no policy drops those.
func (w *Watcher[T]) discardBackLocked(n int) int {
	n = min(n, w.back)
	if n <= 0 {
		return 0
	}
	p := len(w.front) - w.back // the prefix values come first, by index
	w.front = slices.Delete(w.front, p, p+n)
	if w.back -= n; len(w.front) == 0 {
		w.front = nil
	}
	return n
}

// placeRing adds vals to r, a ring with a limit, by policy p, and returns
// how many of them it consumed (fewer than len(vals) only when a Block
// ring is full), how many it added and how many values it dropped: the new
// ones for DropNewest, the oldest queued ones for DropOldest.
func placeRing[T any](r *ring.Ring[T], p FullPolicy, vals []T) (consumed, added, dropped int) {
	switch {
	case p == DropOldest && len(vals) >= r.Limit():
		// The newest Limit values replace everything queued.
		dropped = r.Len() + len(vals) - r.Limit()
		r.Discard(r.Len())
		r.PushAll(vals[len(vals)-r.Limit():])
		return len(vals), len(vals), dropped
	case p == DropOldest:
		over := max(len(vals)-r.Free(), 0)
		r.Discard(over)
		r.PushAll(vals)
		return len(vals), len(vals), over
	case p == DropNewest:
		k := min(len(vals), r.Free())
		r.PushAll(vals[:k])
		return len(vals), k, len(vals) - k
	default: // Block
		k := min(len(vals), r.Free())
		r.PushAll(vals[:k])
		return k, k, 0
	}
}

// policyDrop is the reason a watcher's policy drops values for.
func policyDrop(p FullPolicy) dropReason {
	if p == DropOldest {
		return dropOldest
	}
	return dropNewest
}

// sendAll sends vals on w's channel without waiting, by w's policy, and
// returns how many it consumed: fewer than len(vals) only when a Block
// watcher's channel is full. Only the distributor sends on the channel, so
// no lock is needed, and after it takes a value out there is room for one.
func (b *Broadcaster[T]) sendAll(w *Watcher[T], ch chan T, vals []T) int {
	before, newest, oldest := w.chSent, 0, 0
	n := len(vals)
	for i, v := range vals {
		if w.full == Block || !w.overLimit(ch) {
			select {
			case ch <- v:
				w.chSent++
				continue
			default:
			}
		}
		if w.full == Block {
			n = i
			break
		}
		if w.full == DropOldest && w.chSent-uint64(len(ch)) >= w.chPinned {
			// At least chPinned values have left the channel, so the one
			// in front is not a prefix value: discard it.
			select {
			case <-ch:
				oldest++
			default: // a reader made room meanwhile
			}
			ch <- v
			w.chSent++
			continue
		}
		newest++ // DropNewest, or a DropOldest channel with its prefix in front
	}
	b.count(w, int(w.chSent-before))
	b.drop(w, newest, dropNewest)
	b.drop(w, oldest, dropOldest)
	return n
}

// overLimit reports whether w's channel holds its queue length of
// published values. The channel has room for an unread prefix as well, so
// it can be full for the queue before it is full for Go. len(ch) may only
// fall meanwhile, so the answer errs towards full.
func (w *Watcher[T]) overLimit(ch chan T) bool {
	n := uint64(len(ch))
	if cap(ch) <= w.queue.Limit() {
		return n == uint64(cap(ch))
	}
	received := w.chSent - n
	pinned := w.chPinned - min(w.chPinned, received) // prefix values still in ch
	return n-pinned >= uint64(w.queue.Limit())
}
