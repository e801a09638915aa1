package handle

import (
	"hash/maphash"
	"testing"
)

// TestKeysAllocateNothing: the keys of a batch, and of a value read alone,
// cost no allocation (what a key function that does not return needs is
// made only then): a batch of one value a time would pay it per value.
func TestKeysAllocateNothing(t *testing.T) {
	p := &Pool[int, int]{key: func(v int) int { return v }, seed: maphash.MakeSeed()}
	vals := []int{7}
	keys := make([]keyed[int], 0, 1)
	if n := testing.AllocsPerRun(1000, func() { keys = p.keysFrom(vals, keys[:0]) }); n != 0 {
		t.Errorf("keysFrom of one value: %v allocations, want 0", n)
	}
	d := &Delivery[int]{Value: 7}
	if n := testing.AllocsPerRun(1000, func() { _ = p.keyOf(d) }); n != 0 {
		t.Errorf("keyOf: %v allocations, want 0", n)
	}
}
