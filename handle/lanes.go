package handle

// laneTable holds a shard's lanes by key: open addressing with linear
// probing on the hash the reader took of each key to pick its shard, so
// that a key is hashed once a value (a map hashes it again, and its
// lookup was a tenth of a worker's time a value). Equal keys hash equal
// (maphash.Comparable), so a key's lane is found from its hash and the
// key. Its zero value is empty. Its shard's mutex guards it.
type laneTable[T any, K comparable] struct {
	slots []*lane[T, K] // a power of two long, at most half full; nil is free
	n     int
}

// tableShift drops the hash's low bits, which pick the shard (the same
// in every key of a shard), before they pick a slot.
const tableShift = 16

// find returns the lane of key k, of hash h, or nil.
func (t *laneTable[T, K]) find(h uint64, k K) *lane[T, K] {
	if t.n == 0 {
		return nil
	}
	m := uint64(len(t.slots) - 1)
	for i := h >> tableShift; ; i++ {
		l := t.slots[i&m]
		if l == nil || l.h == h && l.key == k {
			return l
		}
	}
}

// add adds l, whose key is in no lane of t.
func (t *laneTable[T, K]) add(l *lane[T, K]) {
	if 2*(t.n+1) > len(t.slots) {
		t.resize(2 * (t.n + 1))
	}
	t.place(l)
	t.n++
}

// place puts l in the first free slot from its hash's.
func (t *laneTable[T, K]) place(l *lane[T, K]) {
	m := uint64(len(t.slots) - 1)
	i := l.h >> tableShift
	for t.slots[i&m] != nil {
		i++
	}
	t.slots[i&m] = l
}

// resize makes the slots at least n, at least 16, a power of two, and
// places the lanes in them again.
func (t *laneTable[T, K]) resize(n int) {
	size := 16
	for size < n {
		size *= 2
	}
	old := t.slots
	t.slots = make([]*lane[T, K], size)
	for _, l := range old {
		if l != nil {
			t.place(l)
		}
	}
}

// keep removes the lanes for which keep returns false, and shrinks the
// slots to what is left: memory follows the keys that hold values, not
// the keys ever seen.
func (t *laneTable[T, K]) keep(keep func(*lane[T, K]) bool) {
	t.n = 0
	for i, l := range t.slots {
		switch {
		case l == nil:
		case keep(l):
			t.n++
		default:
			t.slots[i] = nil
		}
	}
	t.resize(2 * t.n)
}

// each calls fn with every lane.
func (t *laneTable[T, K]) each(fn func(*lane[T, K])) {
	for _, l := range t.slots {
		if l != nil {
			fn(l)
		}
	}
}
