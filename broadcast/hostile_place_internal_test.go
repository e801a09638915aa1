package broadcast

import (
	"slices"
	"testing"

	"github.com/heraldgo/herald/internal/ring"
)

// ringModel is the slice a ring placed into by policy must behave like.
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

// FuzzPlaceRing drives a ring, through placeRing, and the slice model with
// the same operations and compares contents and counts. That the ring's
// buffer stays within its limit and keeps no reference outside the queued
// values is checked by internal/ring's tests.
func FuzzPlaceRing(f *testing.F) {
	f.Add(uint8(3), []byte{0, 5, 1, 2, 3, 9, 2, 7, 0, 1})
	f.Add(uint8(1), []byte{2, 3, 2, 3, 1, 1, 0, 1})
	f.Add(uint8(8), []byte{0, 8, 1, 3, 0, 8, 1, 20, 2, 30})
	f.Fuzz(placeCase)
}

func placeCase(t *testing.T, limit uint8, ops []byte) {
	lim := int(limit)%40 + 1
	r := ring.New[int](lim)
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
			c1, a1, d1 := placeRing(&r, p, vals)
			c2, a2, d2 := m.place(p, vals)
			if c1 != c2 || a1 != a2 || d1 != d2 {
				t.Fatalf("place(%v, %d vals) = %d,%d,%d, model %d,%d,%d", p, n, c1, a1, d1, c2, a2, d2)
			}
		case 3: // pop
			k := 0
			if r.Len() > 0 {
				k = arg % (r.Len() + 1)
			}
			got := r.PopTo([]int{-1}, k)
			want := append([]int{-1}, m.q[:k]...)
			m.q = m.q[k:]
			if !slices.Equal(got, want) {
				t.Fatalf("popTo(%d) = %v, model %v", k, got, want)
			}
		case 4: // copy out
			dst := make([]int, r.Len())
			if n := r.CopyTo(dst); n != r.Len() || !slices.Equal(dst, m.q) {
				t.Fatalf("CopyTo = %d %v, model %v", n, dst, m.q)
			}
		}
		if r.Len() != len(m.q) || r.Free() != lim-len(m.q) {
			t.Fatalf("Len %d Free %d, model len %d", r.Len(), r.Free(), len(m.q))
		}
		dst := make([]int, r.Len())
		r.CopyTo(dst)
		if !slices.Equal(dst, m.q) {
			t.Fatalf("contents %v, model %v", dst, m.q)
		}
	}
}

// TestHostilePlaceRingRandom runs the placement fuzz body over many random
// inputs.
func TestHostilePlaceRingRandom(t *testing.T) {
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
		t.Run("", func(t *testing.T) { placeCase(t, limit, ops) })
		if t.Failed() {
			t.Fatalf("limit %d ops %v", limit, ops)
		}
	}
}
