// Package ring is a FIFO queue in a circular buffer that grows on demand,
// up to a limit if it has one: a long queue costs memory only once it
// fills. Values pushed back at the front (PushFront) may take a ring over
// its limit; it never grows for values pushed at the back beyond it.
package ring

// Ring is a FIFO queue. Its zero value is an empty ring without a limit.
// It is not safe for concurrent use: its owner guards it.
type Ring[T any] struct {
	buf   []T
	head  int // buf[head] is the oldest value
	n     int // values queued
	limit int // most values the ring holds; 0 for no limit
}

// New returns an empty ring that holds at most limit values; 0 means no
// limit. It panics on a negative limit.
func New[T any](limit int) Ring[T] {
	if limit < 0 {
		panic("ring: negative limit")
	}
	return Ring[T]{limit: limit}
}

// Len returns the number of values queued.
func (r *Ring[T]) Len() int { return r.n }

// Limit returns the most values the ring holds, 0 for no limit.
func (r *Ring[T]) Limit() int { return r.limit }

// Free returns how many more values fit; for a ring without a limit, the
// room left in its buffer before it grows. A ring that PushFront took over
// its limit has no room.
func (r *Ring[T]) Free() int {
	if r.limit == 0 {
		return len(r.buf) - r.n
	}
	return max(r.limit-r.n, 0)
}

// Push appends v. A ring with a limit must have room for it.
func (r *Ring[T]) Push(v T) {
	if r.n == len(r.buf) {
		r.grow(r.n + 1)
	}
	r.buf[r.index(r.n)] = v
	r.n++
}

// PushAll appends vals behind the queued values. A ring with a limit must
// have room for them: len(vals) <= r.Free().
func (r *Ring[T]) PushAll(vals []T) {
	if r.n+len(vals) > len(r.buf) {
		r.grow(r.n + len(vals))
	}
	tail := r.index(r.n)
	// From tail the free slots run to the end of buf and on from its start.
	k := copy(r.buf[tail:], vals)
	copy(r.buf, vals[k:])
	r.n += len(vals)
}

// PushFront puts vals, in their order, ahead of the queued values: a
// reader hands back what it took and did not use. It may take the ring
// over its limit: Free is then zero until values are taken out.
func (r *Ring[T]) PushFront(vals []T) {
	if r.n+len(vals) > len(r.buf) {
		r.grow(r.n + len(vals))
	}
	// The new head is len(vals) slots before the old one, wrapping.
	head := r.head - len(vals)
	if head < 0 {
		head += len(r.buf)
	}
	k := copy(r.buf[head:], vals)
	copy(r.buf, vals[k:])
	r.head = head
	r.n += len(vals)
}

// index returns the position in buf of the i-th queued value.
func (r *Ring[T]) index(i int) int {
	if i += r.head; i >= len(r.buf) {
		i -= len(r.buf)
	}
	return i
}

// grow makes room for at least need values, doubling the buffer (never
// beyond the limit, unless need is) and moving the queued values to its
// start.
func (r *Ring[T]) grow(need int) {
	size := max(need, 2*len(r.buf), 8)
	if r.limit > 0 {
		size = min(size, max(r.limit, need))
	}
	buf := make([]T, size)
	r.CopyTo(buf)
	r.buf, r.head = buf, 0
}

// At returns the i-th queued value, 0 being the oldest (i < r.Len()).
func (r *Ring[T]) At(i int) T { return r.buf[r.index(i)] }

// Peek returns the oldest value. The ring must not be empty.
func (r *Ring[T]) Peek() T { return r.buf[r.head] }

// Pop removes and returns the oldest value. The ring must not be empty.
func (r *Ring[T]) Pop() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero // not Discard(1): two clears cost more than the rest
	if r.n--; r.n == 0 {
		r.head = 0
	} else if r.head++; r.head == len(r.buf) {
		r.head = 0
	}
	return v
}

// CopyTo copies the queued values, oldest first, to dst, which has room
// for them, and returns how many it copied.
func (r *Ring[T]) CopyTo(dst []T) int {
	end := min(r.head+r.n, len(r.buf))
	k := copy(dst, r.buf[r.head:end])
	return k + copy(dst[k:], r.buf[:r.n-k])
}

// PopTo appends the k oldest values (k <= r.Len()) to dst, removes them
// from the ring and returns dst.
func (r *Ring[T]) PopTo(dst []T, k int) []T {
	end := min(r.head+k, len(r.buf))
	dst = append(dst, r.buf[r.head:end]...)
	dst = append(dst, r.buf[:k-(end-r.head)]...)
	r.Discard(k)
	return dst
}

// Discard removes the k oldest values (k <= r.Len()), clearing their
// slots so that the ring keeps no reference to them.
func (r *Ring[T]) Discard(k int) {
	end := min(r.head+k, len(r.buf))
	clear(r.buf[r.head:end])
	clear(r.buf[:k-(end-r.head)])
	r.head = r.index(k)
	if r.n -= k; r.n == 0 {
		r.head = 0
	}
}
