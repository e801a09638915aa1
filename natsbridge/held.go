package natsbridge

import (
	"sync"
	"sync/atomic"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge/internal/queue"
)

// held is the one value a durable reader took from its watcher's queue
// and could not hand out yet (its reservation or its turn did not come
// before its ctx ended): the next reader takes it first. A queue hands
// back only what a batch took, so the value waits here, in front of it.
type held[T any] struct {
	mu        sync.Mutex // guards the fields below
	it        item[T]
	ok        bool
	discarded bool // the watcher stopped: nothing waits here any more
}

// take returns the value held, if any, and holds it no more.
func (h *held[T]) take() (item[T], bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	it, ok := h.it, h.ok
	h.it, h.ok = item[T]{}, false
	return it, ok
}

// giveBack holds it for the next reader; once the watcher stopped (see
// stop), it counts it in handedBack instead.
func (h *held[T]) giveBack(it item[T], handedBack *atomic.Uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.discarded {
		handedBack.Add(1)
		return
	}
	h.it, h.ok = it, true
}

// discard counts the value held, if any, in handedBack, holds it no
// more, and returns its sequence (0 if none). The watcher reads on: a
// value given back later is held again.
func (h *held[T]) discard(handedBack *atomic.Uint64) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var seq uint64
	if h.ok {
		handedBack.Add(1)
		seq = h.it.seq
	}
	h.it, h.ok = item[T]{}, false
	return seq
}

// stop is discard for a watcher that stopped: every value given back from
// now on is counted in handedBack, since no reader takes it.
func (h *held[T]) stop(handedBack *atomic.Uint64) {
	h.discard(handedBack)
	h.mu.Lock()
	h.discarded = true
	h.mu.Unlock()
}

// len returns 1 if a value is held, 0 if not.
func (h *held[T]) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ok {
		return 1
	}
	return 0
}

// errDone: a reader's wait for a value ended with nothing queued (see
// tryReceive).
var errDone = queue.ErrDone

// queuePolicy returns the queue's policy for a watcher's full policy.
func queuePolicy(p broadcast.FullPolicy) queue.Policy {
	switch p {
	case broadcast.DropNewest:
		return queue.DropNewest
	case broadcast.DropOldest:
		return queue.DropOldest
	}
	return queue.Block
}
