package broadcast

// ring is a FIFO queue of at most limit values in a circular buffer. The
// buffer grows on demand up to limit, so a long queue costs memory only
// once it fills. A ring is not safe for concurrent use: each Watcher guards
// its own with its mutex.
type ring[T any] struct {
	buf   []T
	head  int // buf[head] is the oldest value
	n     int // values queued
	limit int // most values the ring holds; at least 1
}

func (r *ring[T]) len() int  { return r.n }
func (r *ring[T]) free() int { return r.limit - r.n }

// push appends vals behind the queued values. They must fit:
// len(vals) <= r.free().
func (r *ring[T]) push(vals []T) {
	if r.n+len(vals) > len(r.buf) {
		r.grow(r.n + len(vals))
	}
	tail := r.head + r.n
	if tail >= len(r.buf) {
		tail -= len(r.buf)
	}
	// From tail the free slots run to the end of buf and on from its start.
	k := copy(r.buf[tail:], vals)
	copy(r.buf, vals[k:])
	r.n += len(vals)
}

// grow makes room for at least need values, doubling the buffer (never
// beyond limit) and moving the queued values to its start.
func (r *ring[T]) grow(need int) {
	buf := make([]T, min(max(need, 2*len(r.buf), 8), r.limit))
	r.copyTo(buf)
	r.buf, r.head = buf, 0
}

// copyTo copies the queued values, oldest first, to dst, which has room
// for them, and returns how many it copied.
func (r *ring[T]) copyTo(dst []T) int {
	end := min(r.head+r.n, len(r.buf))
	k := copy(dst, r.buf[r.head:end])
	return k + copy(dst[k:], r.buf[:r.n-k])
}

// popTo appends the k oldest values to dst, removes them from the ring and
// returns dst.
func (r *ring[T]) popTo(dst []T, k int) []T {
	end := min(r.head+k, len(r.buf))
	dst = append(dst, r.buf[r.head:end]...)
	dst = append(dst, r.buf[:k-(end-r.head)]...)
	r.discard(k)
	return dst
}

// discard removes the k oldest values (k <= r.len()), clearing their slots
// so that the ring keeps no reference to them.
func (r *ring[T]) discard(k int) {
	end := min(r.head+k, len(r.buf))
	clear(r.buf[r.head:end])
	clear(r.buf[:k-(end-r.head)])
	if r.head += k; r.head >= len(r.buf) {
		r.head -= len(r.buf)
	}
	if r.n -= k; r.n == 0 {
		r.head = 0
	}
}

// place adds vals by policy and returns how many of them it consumed
// (fewer than len(vals) only when a Block ring is full), how many it added
// and how many values it dropped: the new ones for DropNewest, the oldest
// queued ones for DropOldest.
func (r *ring[T]) place(p FullPolicy, vals []T) (consumed, added, dropped int) {
	switch {
	case p == DropOldest && len(vals) >= r.limit:
		// The newest limit values replace everything queued.
		dropped = r.n + len(vals) - r.limit
		r.discard(r.n)
		r.push(vals[len(vals)-r.limit:])
		return len(vals), len(vals), dropped
	case p == DropOldest:
		over := max(len(vals)-r.free(), 0)
		r.discard(over)
		r.push(vals)
		return len(vals), len(vals), over
	case p == DropNewest:
		k := min(len(vals), r.free())
		r.push(vals[:k])
		return len(vals), k, len(vals) - k
	default: // Block
		k := min(len(vals), r.free())
		r.push(vals[:k])
		return k, k, 0
	}
}
