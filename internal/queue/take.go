package queue

import (
	"slices"

	"github.com/heraldgo/herald/internal/wait"
)

// Readers take values under the queue's mutex and park on q.readers while
// there are none. The hand-off rule (see wait.Queue): a reader that
// leaves values, or the close, behind it wakes the next parked reader,
// and one that took values wakes the writer if it waits for room.

// Take removes and returns the value in front, waiting for one. It
// returns ErrClosed once the queue is closed and empty, and ErrDone if
// done is closed while nothing is queued (a queued value wins over a
// closed done). A nil done never closes.
func (q *Queue[T]) Take(done <-chan struct{}) (T, error) {
	var v T
	q.mu.Lock()
	err := q.waitLocked(done)
	if err == nil {
		if len(q.pinned) > 0 {
			var zero T
			v, q.pinned[0] = q.pinned[0], zero
			if q.pinned = q.pinned[1:]; len(q.pinned) == 0 {
				q.pinned = nil
			}
		} else {
			v = q.ring.Pop()
		}
	}
	q.leaveLocked(err == nil)
	return v, err
}

// A Batch holds the values a reader took with TakeBatch, and hands them
// out one at a time. Its zero value is an empty batch; it belongs to one
// reader, and is not safe for concurrent use.
type Batch[T any] struct {
	vals   []T
	pinned int // vals[:pinned] were pinned in the queue
	next   int // vals[:next] are handed out
}

// Next hands out the batch's next value; ok is false once all are.
func (b *Batch[T]) Next() (v T, ok bool) {
	if b.next == len(b.vals) {
		return v, false
	}
	v = b.vals[b.next]
	b.next++
	return v, true
}

// Len returns the number of values the batch has not handed out.
func (b *Batch[T]) Len() int { return len(b.vals) - b.next }

// reset empties b, keeping its buffer but no reference to the values.
func (b *Batch[T]) reset() {
	clear(b.vals)
	b.vals, b.pinned, b.next = b.vals[:0], 0, 0
}

// TakeBatch empties b and moves every value queued into it, waiting for
// one, under one lock; values b had not handed out go back to the front
// first. It returns ErrClosed once the queue is closed and empty, and
// ErrDone if done is closed while nothing is queued.
func (q *Queue[T]) TakeBatch(b *Batch[T], done <-chan struct{}) error {
	q.mu.Lock()
	q.putBackLocked(b)
	b.reset()
	err := q.waitLocked(done)
	if err == nil {
		if len(q.pinned) > 0 {
			b.vals = append(b.vals, q.pinned...)
			b.pinned = len(q.pinned)
			clear(q.pinned)
			q.pinned = nil
		}
		b.vals = q.ring.PopTo(b.vals, q.ring.Len())
	}
	q.leaveLocked(err == nil)
	return err
}

// TakeUpTo appends to dst the values in front, at most n (n >= 1), under
// one lock, waiting for one. It returns ErrClosed once the queue is closed
// and empty, and ErrDone if done is closed while nothing is queued, dst
// unchanged then.
func (q *Queue[T]) TakeUpTo(dst []T, n int, done <-chan struct{}) ([]T, error) {
	q.mu.Lock()
	err := q.waitLocked(done)
	if err == nil {
		p := min(n, len(q.pinned))
		dst = append(dst, q.pinned[:p]...)
		clear(q.pinned[:p])
		if q.pinned = q.pinned[p:]; len(q.pinned) == 0 {
			q.pinned = nil
		}
		dst = q.ring.PopTo(dst, min(n-p, q.ring.Len()))
	}
	q.leaveLocked(err == nil)
	return dst, err
}

// All yields the queue's values, in order, until it is closed and every
// value is taken: an iterator over TakeBatch, at one lock and at most one
// wake-up per batch. When the loop ends early, the values it took and did
// not yield go back to the front (PutBack).
func (q *Queue[T]) All(yield func(T) bool) {
	var b Batch[T]
	defer q.PutBack(&b) // the loop ended: break, return or a panic
	for q.TakeBatch(&b, nil) == nil {
		for b.next < len(b.vals) { // not b.Next: a call per value shows in BenchmarkFanout
			v := b.vals[b.next]
			b.next++
			if !yield(v) {
				return
			}
		}
	}
}

// PutBack hands the values b has not handed out back to the front of the
// queue, in order, and empties b. Pinned values stay pinned; the others
// take room again, and are the first DropOldest discards: a queue that
// filled meanwhile holds more than its limit until readers take the
// excess (or, under DropOldest, until the next put). With several
// readers, each PutBack goes ahead of what is queued, so values handed
// back by two readers are in the order of their PutBack calls, the later
// first.
func (q *Queue[T]) PutBack(b *Batch[T]) {
	if b.Len() > 0 {
		q.mu.Lock()
		q.putBackLocked(b)
		reader := q.readers.WakeLocked()
		q.mu.Unlock()
		wait.Signal(reader)
	}
	b.reset()
}

// putBackLocked moves the values b has not handed out to the front.
func (q *Queue[T]) putBackLocked(b *Batch[T]) {
	if b.Len() == 0 {
		return
	}
	rest := b.vals[b.next:]
	p := max(b.pinned-b.next, 0) // rest[:p] were pinned
	if p > 0 {
		q.pinned = slices.Concat(rest[:p], q.pinned) // a new array: b's is cleared
	}
	q.ring.PushFront(rest[p:])
	b.next = len(b.vals)
}

// waitLocked waits, unlocking while it does, until a value is queued (nil),
// the queue is closed and empty (ErrClosed), or done is closed while it
// is empty (ErrDone). It never calls into the reader's context, so that
// no user code runs under the mutex.
func (q *Queue[T]) waitLocked(done <-chan struct{}) error {
	for len(q.pinned)+q.ring.Len() == 0 {
		if q.closed {
			return ErrClosed
		}
		select {
		case <-done:
			return ErrDone
		default:
		}
		c := q.readers.ParkLocked()
		q.mu.Unlock()
		if done == nil { // a receive costs less than a select
			<-c
		} else {
			select {
			case <-c:
			case <-done:
			}
		}
		q.mu.Lock()
		q.readers.UnparkLocked()
	}
	return nil
}

// leaveLocked unlocks on a reader's way out, and applies the hand-off
// rule: room for the writer if the reader took values, and what is left
// (values, or the close) for the next reader.
func (q *Queue[T]) leaveLocked(took bool) {
	var writer, reader chan struct{}
	if took {
		writer = q.writer.WakeLocked()
	}
	if len(q.pinned)+q.ring.Len() > 0 || q.closed {
		reader = q.readers.WakeLocked()
	}
	q.mu.Unlock()
	wait.Signal(writer)
	wait.Signal(reader)
}
