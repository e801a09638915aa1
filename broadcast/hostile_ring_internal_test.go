package broadcast

import (
	"slices"
	"testing"
)

// ringModel is the slice the ring must behave like.
type ringModel struct {
	q     []int
	limit int
}

func (m *ringModel) place(p FullPolicy, vals []int) (consumed, added, dropped int) {
	for i, v := range vals {
		if len(m.q) < m.limit {
			m.q = append(m.q, v)
			added++
			continue
		}
		switch p {
		case Block:
			return i, added, dropped
		case DropNewest:
			dropped++
		case DropOldest:
			m.q = append(m.q[1:], v)
			added++
			dropped++
		}
	}
	return len(vals), added, dropped
}

// FuzzRing drives a ring and the slice model with the same operations
// and compares contents, counts, and that no slot outside the queued values
// keeps a reference (every slot not queued is the zero value).
func FuzzRing(f *testing.F) {
	f.Add(uint8(3), []byte{0, 5, 1, 2, 3, 9, 2, 7, 0, 1})
	f.Add(uint8(1), []byte{2, 3, 2, 3, 1, 1, 0, 1})
	f.Add(uint8(8), []byte{0, 8, 1, 3, 0, 8, 1, 20, 2, 30})
	f.Fuzz(ringCase)
}

func ringCase(t *testing.T, limit uint8, ops []byte) {
	lim := int(limit)%40 + 1
	r := ring[int]{limit: lim}
	m := ringModel{limit: lim}
	next := 1
	for i := 0; i+1 < len(ops); i += 2 {
		arg := int(ops[i+1])
		switch ops[i] % 5 {
		case 0, 1, 2: // place with a policy
			p := FullPolicy(ops[i]%3) + Block
			n := arg % (2*lim + 2)
			vals := make([]int, n)
			for j := range vals {
				vals[j] = next
				next++
			}
			c1, a1, d1 := r.place(p, vals)
			c2, a2, d2 := m.place(p, vals)
			if c1 != c2 || a1 != a2 || d1 != d2 {
				t.Fatalf("place(%v, %d vals) = %d,%d,%d, model %d,%d,%d", p, n, c1, a1, d1, c2, a2, d2)
			}
		case 3: // pop
			k := 0
			if r.len() > 0 {
				k = arg % (r.len() + 1)
			}
			got := r.popTo([]int{-1}, k)
			want := append([]int{-1}, m.q[:k]...)
			m.q = m.q[k:]
			if !slices.Equal(got, want) {
				t.Fatalf("popTo(%d) = %v, model %v", k, got, want)
			}
		case 4: // copy out
			dst := make([]int, r.len())
			if n := r.copyTo(dst); n != r.len() || !slices.Equal(dst, m.q) {
				t.Fatalf("copyTo = %d %v, model %v", n, dst, m.q)
			}
		}
		if r.len() != len(m.q) || r.free() != lim-len(m.q) {
			t.Fatalf("len %d free %d, model len %d", r.len(), r.free(), len(m.q))
		}
		if len(r.buf) > lim {
			t.Fatalf("buffer of %d beyond limit %d", len(r.buf), lim)
		}
		// slots outside the queued values hold nothing
		for j := range r.buf {
			off := j - r.head
			if off < 0 {
				off += len(r.buf)
			}
			if off >= r.n && r.buf[j] != 0 {
				t.Fatalf("slot %d (not queued) keeps %d", j, r.buf[j])
			}
		}
		dst := make([]int, r.len())
		r.copyTo(dst)
		if !slices.Equal(dst, m.q) {
			t.Fatalf("contents %v, model %v", dst, m.q)
		}
	}
}

// TestHostileRingRandom runs the ring fuzz body over many random inputs.
func TestHostileRingRandom(t *testing.T) {
	rng := uint64(1)
	rnd := func() byte {
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return byte(rng)
	}
	for range 20000 {
		ops := make([]byte, 2*int(rnd()%40))
		for i := range ops {
			ops[i] = rnd()
		}
		limit := rnd()
		t.Run("", func(t *testing.T) { ringCase(t, limit, ops) })
		if t.Failed() {
			t.Fatalf("limit %d ops %v", limit, ops)
		}
	}
}
