// Package queue is the queue between one writer and the readers of a
// watcher: a FIFO with a limit, a policy for a put that finds it full,
// and the waits on both sides.
//
// The writer, one goroutine, never blocks inside the queue: a put under
// Block that finds it full takes what fits and returns a channel that
// signals room, so that the writer can wait on it in a select with
// whatever else ends its wait. Readers take one value (Take), up to n
// (TakeUpTo) or every queued value (TakeBatch), waiting for one; a reader
// that took a batch and did not use all of it hands the rest back to the
// front (PutBack).
// Close, by the writer's side, ends the readers once they have taken what
// is queued.
//
// Values may also be pinned ahead of the others (a snapshot given when
// the queue is made): they take no room and no policy drops them.
package queue

import (
	"errors"
	"slices"
	"sync"

	"github.com/heraldgo/herald/internal/ring"
	"github.com/heraldgo/herald/internal/wait"
)

// Policy says what a put does when the queue is full.
type Policy int

const (
	// Block takes what fits and has the writer wait for room.
	Block Policy = iota + 1
	// DropNewest skips the values that do not fit.
	DropNewest
	// DropOldest discards the oldest queued values to make room.
	DropOldest
)

// Errors the readers' calls return.
var (
	// ErrClosed: the queue was closed and every value was taken.
	ErrClosed = errors.New("queue: closed")
	// ErrDone: the done channel given was closed while nothing was
	// queued.
	ErrDone = errors.New("queue: done")
)

// Queue is a FIFO of values of T. Its zero value is not usable; create
// one with New. It is safe for concurrent use by one writer (Put, PutAll,
// Close) and any number of readers; Drain, Len, Limit and Counts may be
// called from any goroutine.
//
// Every value put is, at the time of the put, either added (and so
// counted in Counts) or dropped (and counted in the put's result); of
// those added, DropOldest may discard some later, counted by the put
// that discarded them.
type Queue[T any] struct {
	full Policy // never the zero value

	mu      sync.Mutex // guards the fields below
	pinned  []T        // ahead of ring: no room taken, never dropped
	ring    ring.Ring[T]
	added   uint64     // values ever added to ring, see Counts
	closed  bool       // Close was called
	readers wait.Queue // readers waiting for values or the close
	writer  wait.Queue // the writer waiting for room (Block)
}

// New returns an empty queue that holds limit values and places a put
// that finds it full by policy full, with the values of pinned (copied)
// queued ahead of anything put. It panics if limit is not positive or
// full is not a Policy.
func New[T any](limit int, full Policy, pinned []T) *Queue[T] {
	if limit <= 0 {
		panic("queue: limit not positive")
	}
	if full < Block || full > DropOldest {
		panic("queue: invalid policy")
	}
	return &Queue[T]{
		full:    full,
		pinned:  slices.Clone(pinned),
		ring:    ring.New[T](limit),
		readers: wait.NewQueue(),
		writer:  wait.NewQueue(),
	}
}

// Put is PutAll for one value: added is 1 or 0. It allocates nothing.
func (q *Queue[T]) Put(v T) (added, dropped int, room <-chan struct{}) {
	one := [1]T{v}
	return q.PutAll(one[:])
}

// PutAll puts vals behind the queued values, by the queue's policy, and
// returns how many it added to the queue and how many values it dropped:
//
//   - Block: room is nil once every value of vals is added. When the queue
//     fills first, PutAll adds vals[:added] and returns room, a channel
//     that receives once a reader takes values (or Drain empties the
//     queue): the writer then puts vals[added:] again.
//   - DropNewest: the values of vals that do not fit are dropped: added +
//     dropped is len(vals).
//   - DropOldest: every value of vals is added; dropped counts the queued
//     values discarded to make room, oldest first (when vals alone is
//     longer than the limit, its own oldest values too).
//
// Pinned values take no room and are never dropped; values handed back
// by PutBack take room again, and are the first DropOldest discards.
// After Close, PutAll adds and drops nothing: the values are not the
// queue's. It allocates nothing once the queue has grown.
func (q *Queue[T]) PutAll(vals []T) (added, dropped int, room <-chan struct{}) {
	q.mu.Lock()
	if q.writer.Parked() > 0 {
		q.writer.UnparkLocked() // back from a wait for room
	}
	if q.closed {
		q.mu.Unlock()
		return 0, 0, nil
	}
	added, dropped = q.placeLocked(vals)
	q.added += uint64(added)
	if q.full == Block && added < len(vals) {
		room = q.writer.ParkLocked()
	}
	var reader chan struct{}
	if added > 0 {
		reader = q.readers.WakeLocked()
	}
	q.mu.Unlock()
	wait.Signal(reader)
	return added, dropped, room
}

// placeLocked adds vals to the ring by the policy and returns how many it
// added and how many values it dropped.
func (q *Queue[T]) placeLocked(vals []T) (added, dropped int) {
	r := &q.ring
	switch {
	case q.full == DropOldest && len(vals) >= r.Limit():
		// The newest Limit values replace everything queued.
		dropped = r.Len() + len(vals) - r.Limit()
		r.Discard(r.Len())
		r.PushAll(vals[len(vals)-r.Limit():])
		return len(vals), dropped
	case q.full == DropOldest:
		// Over the limit after a PutBack, the ring sheds the excess too.
		dropped = max(r.Len()+len(vals)-r.Limit(), 0)
		r.Discard(dropped)
		r.PushAll(vals)
		return len(vals), dropped
	}
	k := min(len(vals), r.Free())
	r.PushAll(vals[:k])
	if q.full == DropNewest {
		return k, len(vals) - k
	}
	return k, 0
}

// Close ends the queue: readers take what is queued, then get ErrClosed;
// a writer waiting for room is woken, and its next put adds nothing. It
// is idempotent.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	q.closed = true
	// Passed on from reader to reader (see leaveLocked).
	reader, writer := q.readers.WakeLocked(), q.writer.WakeLocked()
	q.mu.Unlock()
	wait.Signal(reader)
	wait.Signal(writer)
}

// Drain removes every value queued (pinned values first), appends them in
// order to dst and returns it, for an owner that counts them or hands them
// on. A writer waiting for room is woken.
func (q *Queue[T]) Drain(dst []T) []T {
	q.mu.Lock()
	dst = append(dst, q.pinned...)
	clear(q.pinned)
	q.pinned = nil
	dst = q.ring.PopTo(dst, q.ring.Len())
	writer := q.writer.WakeLocked()
	q.mu.Unlock()
	wait.Signal(writer)
	return dst
}

// Len returns the number of values queued, pinned ones included; not
// those a reader holds in a Batch.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pinned) + q.ring.Len()
}

// Limit returns the most values a put fills the queue to.
func (q *Queue[T]) Limit() int { return q.ring.Limit() }

// Counts returns, at one instant, how many values puts ever added to the
// queue (pinned values not included; values DropOldest discarded
// included) and how many are queued now (as Len).
func (q *Queue[T]) Counts() (added uint64, queued int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.added, len(q.pinned) + q.ring.Len()
}
