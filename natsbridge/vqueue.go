package natsbridge

import (
	"errors"
	"sync"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge/internal/ring"
	"github.com/heraldgo/herald/natsbridge/internal/wait"
)

// vqueue is a watcher's queue: a FIFO with a limit and a policy for when
// it is full, one writer (the feed) and any number of readers.
type vqueue[T any] struct {
	mu      sync.Mutex // guards the fields below
	r       ring.Ring[T]
	front   []T // values handed back, read before r; they count against the limit
	policy  broadcast.FullPolicy
	added   uint64 // values ever added (DropOldest's discards included)
	closed  bool
	readers wait.Queue
	writer  wait.Queue
}

var errQueueClosed = errors.New("natsbridge: queue closed")

func newVQueue[T any](limit int, p broadcast.FullPolicy) *vqueue[T] {
	return &vqueue[T]{r: ring.New[T](limit), policy: p, readers: wait.NewQueue(), writer: wait.NewQueue()}
}

// put adds v by the policy. It reports whether v was consumed (placed or
// dropped), how many values it dropped (v itself under DropNewest, the
// oldest under DropOldest), and for a full Block queue the channel to wait
// on for room.
func (q *vqueue[T]) put(v T) (ok bool, dropped int, room <-chan struct{}) {
	q.mu.Lock()
	if q.writer.Parked() > 0 {
		q.writer.UnparkLocked()
	}
	full := q.r.Len()+len(q.front) >= q.r.Limit()
	switch {
	case q.closed:
		q.mu.Unlock()
		return true, 0, nil
	case !full:
		q.r.Push(v)
		q.added++
	case q.policy == broadcast.DropNewest:
		q.mu.Unlock()
		return true, 1, nil
	case q.policy == broadcast.DropOldest:
		if len(q.front) > 0 {
			clear(q.front[:1])
			q.front = q.front[1:]
		} else {
			q.r.Discard(1)
		}
		q.r.Push(v)
		q.added++
		dropped = 1
	default:
		room = q.writer.ParkLocked()
		q.mu.Unlock()
		return false, 0, room
	}
	c := q.readers.WakeLocked()
	q.mu.Unlock()
	wait.Signal(c)
	return true, dropped, nil
}

// take appends up to limit values (all queued if limit < 0) to buf,
// waiting for one until done is closed (nil: no end). It returns
// errQueueClosed once the queue is closed and empty, and errDone if done
// was closed first.
func (q *vqueue[T]) take(done <-chan struct{}, buf []T, limit int) ([]T, error) {
	q.mu.Lock()
	for len(q.front)+q.r.Len() == 0 {
		if q.closed {
			q.mu.Unlock()
			return buf, errQueueClosed
		}
		c := q.readers.ParkLocked()
		q.mu.Unlock()
		select {
		case <-c:
		case <-done:
			q.mu.Lock()
			q.readers.UnparkLocked()
			q.mu.Unlock()
			return buf, errDone
		}
		q.mu.Lock()
		q.readers.UnparkLocked()
	}
	if limit < 0 {
		limit = len(q.front) + q.r.Len()
	}
	k := min(limit, len(q.front))
	buf = append(buf, q.front[:k]...)
	clear(q.front[:k])
	if q.front = q.front[k:]; len(q.front) == 0 {
		q.front = nil
	}
	buf = q.r.PopTo(buf, min(limit-k, q.r.Len()))
	writer := q.writer.WakeLocked()
	var reader chan struct{}
	if len(q.front)+q.r.Len() > 0 || q.closed {
		reader = q.readers.WakeLocked()
	}
	q.mu.Unlock()
	wait.Signal(writer)
	wait.Signal(reader)
	return buf, nil
}

var errDone = errors.New("natsbridge: done")

// giveBack puts vals, taken and not handed out, back at the front, in
// order.
func (q *vqueue[T]) giveBack(vals []T) {
	if len(vals) == 0 {
		return
	}
	q.mu.Lock()
	q.front = append(append(make([]T, 0, len(vals)+len(q.front)), vals...), q.front...)
	c := q.readers.WakeLocked()
	q.mu.Unlock()
	wait.Signal(c)
}

// close ends the queue: readers take what is queued, then errQueueClosed;
// puts are ignored. A writer waiting for room is woken.
func (q *vqueue[T]) close() {
	q.mu.Lock()
	q.closed = true
	r, w := q.readers.WakeLocked(), q.writer.WakeLocked()
	q.mu.Unlock()
	wait.Signal(r)
	wait.Signal(w)
}

// drain removes and returns everything queued.
func (q *vqueue[T]) drain() []T {
	q.mu.Lock()
	out := append([]T(nil), q.front...)
	q.front = nil
	out = q.r.PopTo(out, q.r.Len())
	w := q.writer.WakeLocked()
	q.mu.Unlock()
	wait.Signal(w)
	return out
}

// counts returns, at one instant, how many values were ever added and how
// many are queued.
func (q *vqueue[T]) counts() (added uint64, queued int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.added, len(q.front) + q.r.Len()
}
