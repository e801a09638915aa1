package handle

import (
	"hash/maphash"
	"math/rand/v2"
	"testing"
)

// TestLaneTableFindsWhatAMapWould: a shard's lanes by key, under random
// adds and sweeps, find the lane a map would, with keys whose hashes
// collide in the slot bits and in the shard bits, or begin at the last
// slot (probes wrap round); the table is at most half full, and a sweep
// leaves at most four slots a lane left (or 16).
func TestLaneTableFindsWhatAMapWould(t *testing.T) {
	seed := maphash.MakeSeed()
	for _, c := range []struct {
		name string
		hash func(int) uint64
	}{
		{"maphash", func(k int) uint64 { return maphash.Comparable(seed, k) }},
		{"one slot", func(k int) uint64 { return uint64(k%3) << 60 }},                   // every key probes from one of three slots
		{"shard bits only", func(k int) uint64 { return uint64(k) & 0xf }},              // differ below tableShift only
		{"from the last slot", func(k int) uint64 { return ^uint64(0) &^ uint64(k%2) }}, // probes wrap round
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var tab laneTable[int, int]
			model := map[int]*lane[int, int]{}
			for round := range 50 {
				for range rng.IntN(300) {
					k := rng.IntN(1000)
					h := c.hash(k)
					l := tab.find(h, k)
					if l != model[k] {
						t.Fatalf("round %d: find(%d) = %p, want %p", round, k, l, model[k])
					}
					if l == nil {
						l = &lane[int, int]{key: k, h: h}
						tab.add(l)
						model[k] = l
					}
					l.tries = rng.IntN(2) // 1: holds values, kept by a sweep
				}
				if tab.n != len(model) || 2*tab.n > len(tab.slots) {
					t.Fatalf("round %d: %d lanes in %d slots, want %d in at least twice as many", round, tab.n, len(tab.slots), len(model))
				}
				if rng.IntN(3) == 0 {
					tab.keep(func(l *lane[int, int]) bool { return l.tries == 1 })
					for k, l := range model {
						if l.tries == 0 {
							delete(model, k)
						}
					}
					if tab.n != len(model) || len(tab.slots) > max(16, 4*tab.n) {
						t.Fatalf("round %d, swept: %d lanes in %d slots, want %d in at most 4x", round, tab.n, len(tab.slots), len(model))
					}
				}
				for k := range 1000 {
					if l := tab.find(c.hash(k), k); l != model[k] {
						t.Fatalf("round %d: find(%d) = %p, want %p", round, k, l, model[k])
					}
				}
				seen := 0
				tab.each(func(*lane[int, int]) { seen++ })
				if seen != len(model) {
					t.Fatalf("round %d: each saw %d lanes, want %d", round, seen, len(model))
				}
			}
		})
	}
}
