package ring_test

import (
	"slices"
	"testing"

	"github.com/heraldgo/herald/internal/ring"
)

// FuzzRing drives a ring and a slice with the same operations and
// compares them after each.
func FuzzRing(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0, 0, 4, 5, 1, 1}, uint8(3))
	f.Add([]byte{5, 5, 5, 5, 5, 5, 5, 5, 5, 2, 2, 2}, uint8(0))
	f.Fuzz(func(t *testing.T, ops []byte, limit uint8) {
		r := ring.New[int](int(limit % 9))
		var model []int
		next := 0
		for _, op := range ops {
			free := r.Free()
			if r.Limit() == 0 {
				free = 64
			}
			switch k := int(op>>3) % 5; op % 6 {
			case 0, 1: // push one
				if free > 0 {
					r.Push(next)
					model = append(model, next)
					next++
				}
			case 2: // push several
				k = min(k, free)
				vals := make([]int, k)
				for i := range vals {
					vals[i] = next
					next++
				}
				r.PushAll(vals)
				model = append(model, vals...)
			case 3: // pop one
				if len(model) > 0 {
					if v := r.Pop(); v != model[0] {
						t.Fatalf("Pop = %d, want %d", v, model[0])
					}
					model = model[1:]
				}
			case 4: // pop several
				k = min(k, len(model))
				if got := r.PopTo(nil, k); !slices.Equal(got, model[:k]) {
					t.Fatalf("PopTo(%d) = %v, want %v", k, got, model[:k])
				}
				model = model[k:]
			case 5: // discard
				k = min(k, len(model))
				r.Discard(k)
				model = model[k:]
			}
			got := make([]int, r.Len())
			r.CopyTo(got)
			if !slices.Equal(got, model) {
				t.Fatalf("ring holds %v, want %v", got, model)
			}
			for i, v := range model {
				if r.At(i) != v {
					t.Fatalf("At(%d) = %d, want %d", i, r.At(i), v)
				}
			}
			if r.Limit() > 0 && r.Len()+r.Free() != r.Limit() {
				t.Fatalf("Len %d + Free %d != Limit %d", r.Len(), r.Free(), r.Limit())
			}
		}
	})
}
