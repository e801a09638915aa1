package handle

import "github.com/heraldgo/herald/internal/ring"

// vals is a lane's values, in order: the head inline, so that a lane of
// one value at a time (the common case) touches no memory but its own,
// and a worker may hold a pointer to the head while it handles it (only
// its worker pops it; values pushed meanwhile go behind it); the rest in
// a ring, made the first time a key has two values.
type vals[T any] struct {
	head entry[T]
	n    int
	rest *ring.Ring[entry[T]]
	most int // the most values held since it was last empty
}

// keptRest is how many values a lane may have held at once for its ring
// to be kept once it is empty: a key with short backlogs keeps its ring,
// one whose backlog was long gives it back (an idle lane, or a free one,
// would hold it for good).
const keptRest = 16

// Len returns how many values the lane holds.
func (q *vals[T]) Len() int { return q.n }

// Head returns the first value; valid while Len() > 0 and until Pop.
func (q *vals[T]) Head() *entry[T] { return &q.head }

// At returns the i-th value.
func (q *vals[T]) At(i int) entry[T] {
	if i == 0 {
		return q.head
	}
	return q.rest.At(i - 1)
}

// Push adds e at the end.
func (q *vals[T]) Push(e entry[T]) {
	if q.n == 0 {
		q.head = e
	} else {
		if q.rest == nil {
			r := ring.New[entry[T]](0)
			q.rest = &r
		}
		q.rest.Push(e)
	}
	q.n++
	q.most = max(q.most, q.n)
}

// Pop removes the head.
func (q *vals[T]) Pop() {
	if q.n--; q.n > 0 {
		q.head = q.rest.Pop()
	} else {
		q.head = entry[T]{}
		q.emptied()
	}
}

// emptied forgets the ring if the lane held more than keptRest values.
func (q *vals[T]) emptied() {
	if q.most > keptRest {
		q.rest = nil
	}
	q.most = 0
}

// Truncate keeps the first k values (k is 0 or 1) and drops the rest.
func (q *vals[T]) Truncate(k int) {
	if q.n > 1 {
		q.rest.Discard(q.n - 1)
	}
	if k == 0 {
		q.head = entry[T]{}
	}
	q.n = min(q.n, k)
	if q.n == 0 {
		q.emptied()
	}
}
