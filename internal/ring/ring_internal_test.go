package ring

import (
	"slices"
	"testing"
)

// FuzzRingBuffer drives a ring and a slice with the same operations and
// checks, after each, what the API cannot see: the buffer never grows
// beyond the limit, and no slot outside the queued values keeps a
// reference (every slot not queued is the zero value).
func FuzzRingBuffer(f *testing.F) {
	f.Add(uint8(3), []byte{0, 5, 1, 2, 3, 9, 2, 7, 0, 1})
	f.Add(uint8(1), []byte{2, 3, 2, 3, 1, 1, 0, 1})
	f.Add(uint8(8), []byte{0, 8, 1, 3, 0, 8, 1, 20, 2, 30})
	f.Add(uint8(0), []byte{0, 40, 3, 7, 0, 30, 4, 0})
	f.Fuzz(bufferCase)
}

func bufferCase(t *testing.T, limit uint8, ops []byte) {
	lim := int(limit) % 41 // 0: no limit
	r := New[int](lim)
	var model []int
	next := 1
	for i := 0; i+1 < len(ops); i += 2 {
		arg := int(ops[i+1])
		switch ops[i] % 5 {
		case 0, 1: // push what fits
			n := arg % (2*lim + 2)
			if lim > 0 {
				n = min(n, r.Free())
			}
			vals := make([]int, n)
			for j := range vals {
				vals[j] = next
				next++
			}
			if ops[i]%5 == 0 {
				r.PushAll(vals)
			} else {
				for _, v := range vals {
					r.Push(v)
				}
			}
			model = append(model, vals...)
		case 2: // pop
			k := arg % (r.Len() + 1)
			got := r.PopTo([]int{-1}, k)
			if want := append([]int{-1}, model[:k]...); !slices.Equal(got, want) {
				t.Fatalf("PopTo(%d) = %v, model %v", k, got, want)
			}
			model = model[k:]
		case 3: // discard
			k := arg % (r.Len() + 1)
			r.Discard(k)
			model = model[k:]
		case 4: // pop one
			if len(model) > 0 {
				if v := r.Pop(); v != model[0] {
					t.Fatalf("Pop() = %d, model %d", v, model[0])
				}
				model = model[1:]
			}
		}
		checkBuffer(t, &r, model)
	}
}

func checkBuffer(t *testing.T, r *Ring[int], model []int) {
	t.Helper()
	if r.limit > 0 && len(r.buf) > r.limit {
		t.Fatalf("buffer of %d beyond limit %d", len(r.buf), r.limit)
	}
	checkSlots(t, r, model)
}

// checkSlots checks that r holds model and that every slot not queued is
// the zero value.
func checkSlots(t *testing.T, r *Ring[int], model []int) {
	t.Helper()
	for j := range r.buf {
		off := j - r.head
		if off < 0 {
			off += len(r.buf)
		}
		if off >= r.n && r.buf[j] != 0 {
			t.Fatalf("slot %d (not queued) keeps %d", j, r.buf[j])
		}
	}
	dst := make([]int, r.Len())
	r.CopyTo(dst)
	if !slices.Equal(dst, model) {
		t.Fatalf("contents %v, model %v", dst, model)
	}
}

// TestRingBufferRandom runs the buffer fuzz body over many random inputs.
func TestRingBufferRandom(t *testing.T) {
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
		t.Run("", func(t *testing.T) { bufferCase(t, limit, ops) })
		if t.Failed() {
			t.Fatalf("limit %d ops %v", limit, ops)
		}
	}
}

// FuzzRingPushFront mixes pushes at both ends with pops and checks the
// contents against a slice, and what the API cannot see: the buffer grows
// beyond the limit only as far as PushFront took the ring, and every slot
// not queued is the zero value.
func FuzzRingPushFront(f *testing.F) {
	f.Add(uint8(3), []byte{0, 3, 1, 2, 2, 1, 1, 5, 0, 1})
	f.Add(uint8(1), []byte{1, 1, 1, 2, 2, 3, 0, 1, 1, 4})
	f.Add(uint8(0), []byte{0, 9, 1, 9, 2, 4, 1, 30})
	f.Fuzz(func(t *testing.T, limit uint8, ops []byte) {
		lim := int(limit) % 17 // 0: no limit
		r := New[int](lim)
		var model []int
		next, peak := 1, 0
		for i := 0; i+1 < len(ops); i += 2 {
			k := int(ops[i+1]) % 12
			switch ops[i] % 3 {
			case 0: // push what fits at the back
				if lim > 0 {
					k = min(k, r.Free())
				}
				vals := seqFrom(&next, k)
				r.PushAll(vals)
				model = append(model, vals...)
			case 1: // hand values back at the front
				vals := seqFrom(&next, k)
				r.PushFront(vals)
				model = append(vals, model...)
			case 2: // pop
				k = min(k, r.Len())
				if got := r.PopTo(nil, k); !slices.Equal(got, model[:k]) {
					t.Fatalf("PopTo(%d) = %v, model %v", k, got, model[:k])
				}
				model = model[k:]
			}
			peak = max(peak, len(model))
			if lim > 0 && len(r.buf) > max(lim, peak) {
				t.Fatalf("buffer of %d with limit %d, at most %d ever queued", len(r.buf), lim, peak)
			}
			if lim > 0 && r.Free() != max(lim-len(model), 0) {
				t.Fatalf("Free() = %d with %d queued, limit %d", r.Free(), len(model), lim)
			}
			checkSlots(t, &r, model)
		}
	})
}

func seqFrom(next *int, k int) []int {
	vals := make([]int, k)
	for j := range vals {
		vals[j] = *next
		*next++
	}
	return vals
}

// TestEmptyRingEdges: Discard(0), PopTo(dst, 0) and Free on an
// empty ring with a limit, before any buffer exists and after the ring has
// wrapped and emptied, leave it empty and usable; a ring filled to its
// limit after wrapping keeps FIFO order and never grows beyond the limit.
func TestEmptyRingEdges(t *testing.T) {
	for _, limit := range []int{1, 2, 3, 7, 8, 9} {
		r := New[int](limit)
		r.Discard(0)
		if got := r.PopTo([]int{-1}, 0); !slices.Equal(got, []int{-1}) {
			t.Fatalf("limit %d: PopTo(0) on an empty ring = %v", limit, got)
		}
		if r.Len() != 0 || r.Free() != limit {
			t.Fatalf("limit %d: empty ring Len %d Free %d", limit, r.Len(), r.Free())
		}
		next, want := 0, []int(nil)
		for round := range 3*limit + 2 {
			// Fill, take a few, so that head moves round the buffer.
			for r.Free() > 0 {
				r.Push(next)
				want = append(want, next)
				next++
			}
			if len(r.buf) > limit {
				t.Fatalf("limit %d: buffer of %d", limit, len(r.buf))
			}
			k := 1 + round%r.Len()
			if got := r.PopTo(nil, k); !slices.Equal(got, want[:k]) {
				t.Fatalf("limit %d: PopTo(%d) = %v, want %v", limit, k, got, want[:k])
			}
			want = want[k:]
			r.Discard(0)
			if r.Len() == 0 {
				r.Discard(0)
				if r.head != 0 {
					t.Fatalf("limit %d: empty ring with head %d", limit, r.head)
				}
			}
		}
		r.Discard(r.Len())
		r.Discard(0)
		if r.Len() != 0 || r.Free() != limit {
			t.Fatalf("limit %d: after emptying, Len %d Free %d", limit, r.Len(), r.Free())
		}
		for i, v := range r.buf {
			if v != 0 {
				t.Fatalf("limit %d: slot %d keeps %d after Discard", limit, i, v)
			}
		}
		r.PushAll([]int{7})
		if r.Peek() != 7 || r.Pop() != 7 || r.Len() != 0 {
			t.Fatalf("limit %d: ring unusable after the edges", limit)
		}
	}
}
