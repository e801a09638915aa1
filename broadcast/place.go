package broadcast

import "github.com/heraldgo/herald/internal/queue"

// Placement: how the distributor puts values in a watcher's queue by the
// watcher's FullPolicy. A queue watcher's queue is a queue.Queue, which
// applies the policy itself; a channel watcher's queue is its channel.

// place puts what it can of vals in w's queue, by w's policy, and returns
// how many it consumed. When w is a full Block watcher, it also returns
// what to wait on: the channel to send the next value on, or the signal of
// a reader making room in the queue.
func (b *Broadcaster[T]) place(w *Watcher[T], vals []T) (n int, send chan T, room <-chan struct{}) {
	switch {
	case w.closed:
		return len(vals), nil, nil
	case w.ch != nil:
		if n = b.sendAll(w, w.ch, vals); n < len(vals) {
			send = w.ch
		}
		return n, send, nil
	}
	added, dropped, room := w.q.PutAll(vals)
	b.d.delivered += uint64(added)
	b.drop(w, dropped, policyDrop(w.full))
	if room != nil {
		return added, nil, room // Block, full: vals[:added] are in
	}
	return len(vals), nil, nil
}

// queuePolicy is p for a queue watcher's queue.
func queuePolicy(p FullPolicy) queue.Policy {
	switch p {
	case DropNewest:
		return queue.DropNewest
	case DropOldest:
		return queue.DropOldest
	}
	return queue.Block
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
	n, limit := uint64(len(ch)), uint64(cap(ch))-w.prefix
	if w.prefix == 0 {
		return n == limit
	}
	received := w.chSent - n
	pinned := w.chPinned - min(w.chPinned, received) // prefix values still in ch
	return n-pinned >= limit
}
