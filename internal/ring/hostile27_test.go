package ring

import (
	"slices"
	"testing"
)

// TestHostile27EmptyRingEdges: Discard(0), PopTo(dst, 0) and Free on an
// empty ring with a limit, before any buffer exists and after the ring has
// wrapped and emptied, leave it empty and usable; a ring filled to its
// limit after wrapping keeps FIFO order and never grows beyond the limit.
func TestHostile27EmptyRingEdges(t *testing.T) {
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
