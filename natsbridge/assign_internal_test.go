package natsbridge

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// assignAll returns what each member gets, each computing it on its own.
func assignAll(claims map[string][]int, p int) map[string][]int {
	out := map[string][]int{}
	for m := range claims {
		out[m] = assign(claims, p, m)
	}
	return out
}

// checkShared fails unless got gives each of p partitions to exactly one
// member, and the members' counts differ by one at most.
func checkShared(t *testing.T, got map[string][]int, p int) {
	t.Helper()
	owners := make([]int, p)
	lo, hi := p, 0
	for _, parts := range got {
		lo, hi = min(lo, len(parts)), max(hi, len(parts))
		for _, i := range parts {
			owners[i]++
		}
	}
	for i, n := range owners {
		if n != 1 {
			t.Fatalf("partition %d has %d owners: %v", i, n, got)
		}
	}
	if hi-lo > 1 {
		t.Fatalf("counts from %d to %d: %v", lo, hi, got)
	}
}

func members(n int) map[string][]int {
	c := map[string][]int{}
	for i := range n {
		c[fmt.Sprintf("m%d", i)] = nil
	}
	return c
}

// TestAssignShares: whatever the members claim (nothing, what they were
// given, stale or bogus partitions), every member computes the same
// sharing: each partition to one member, counts within one of each other.
func TestAssignShares(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 7; n++ {
		for p := 1; p <= 13; p++ {
			c := members(n)
			checkShared(t, assignAll(c, p), p)
			for m := range c {
				for range r.IntN(4) {
					c[m] = append(c[m], r.IntN(p+2)-1) // some out of range
				}
			}
			checkShared(t, assignAll(c, p), p)
		}
	}
}

// TestAssignSticky: once the members read what they were given, the same
// members get the same again; a member that joins takes partitions only
// from others (none moves between the others), and one that leaves gives
// only its own.
func TestAssignSticky(t *testing.T) {
	for n := 1; n <= 6; n++ {
		for _, p := range []int{1, 3, 6, 12, 32} {
			c := members(n)
			was := assignAll(c, p)
			if again := assignAll(was, p); !equalShares(again, was) {
				t.Fatalf("n=%d p=%d: %v, then %v for the same claims", n, p, was, again)
			}
			// A member joins.
			joined := clone(was)
			joined["new"] = nil
			now := assignAll(joined, p)
			checkShared(t, now, p)
			for m, parts := range now {
				if m == "new" {
					continue
				}
				for _, i := range parts {
					if !slices.Contains(was[m], i) {
						t.Errorf("n=%d p=%d: a join moved partition %d to %s: %v → %v", n, p, i, m, was, now)
					}
				}
			}
			// A member leaves.
			if n == 1 {
				continue
			}
			left := clone(was)
			delete(left, "m0")
			now = assignAll(left, p)
			checkShared(t, now, p)
			for m, parts := range was {
				if m == "m0" {
					continue
				}
				for _, i := range parts {
					if !slices.Contains(now[m], i) {
						t.Errorf("n=%d p=%d: a leave took partition %d from %s: %v → %v", n, p, i, m, was, now)
					}
				}
			}
		}
	}
}

// TestAssignStaleClaim: while a member hands a partition over, both it
// and the member that gained it claim it; the sharing stays whole and
// the gainer keeps it.
func TestAssignStaleClaim(t *testing.T) {
	c := map[string][]int{"a": {0, 1, 2}, "b": {3, 4, 5}}
	joined := clone(c)
	joined["c"] = nil
	now := assignAll(joined, 6)
	stale := clone(now)
	for _, i := range now["c"] {
		for _, old := range []string{"a", "b"} {
			if slices.Contains(c[old], i) {
				stale[old] = append(stale[old], i) // not yet handed over
			}
		}
	}
	got := assignAll(stale, 6)
	checkShared(t, got, 6)
	if !equalShares(got, now) {
		t.Errorf("with the stale claims %v: %v; want %v", stale, got, now)
	}
}

func clone(c map[string][]int) map[string][]int {
	out := map[string][]int{}
	for m, parts := range c {
		out[m] = slices.Clone(parts)
	}
	return out
}

func equalShares(a, b map[string][]int) bool {
	if len(a) != len(b) {
		return false
	}
	for m, parts := range a {
		if !slices.Equal(parts, b[m]) {
			return false
		}
	}
	return true
}
