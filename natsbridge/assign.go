package natsbridge

import (
	"cmp"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
)

// assign returns the partitions, of p, that member gets among the live
// members, given the partitions each says it reads (claims, by member).
// Every member computes it alike from the same claims:
//
//   - Shares are even: p/N each, one more for p%N of the members, those
//     that claim the most (then by name), so that counts differ by one at
//     most and as few partitions as can be move.
//   - Sticky: each partition stays with a member that claims it, while
//     that member is within its share; a member that joins takes its
//     share from those above theirs, and a member that dies or leaves
//     gives its partitions to those below theirs; nothing else moves.
//   - The rest go by rendezvous hashing: each to the member that ranks
//     highest for it among those below their share.
//
// A claim is stale for a beat while its member hands a partition over:
// claimants of one partition are decided by rank.
func assign(claims map[string][]int, p int, member string) []int {
	members := slices.Sorted(maps.Keys(claims))
	if len(members) == 0 {
		return nil
	}
	quota := shares(members, claims, p)
	owner := make([]string, p)
	held := make(map[string]int, len(members))
	pick := func(i int, claimed bool) {
		best := ""
		for _, c := range members {
			if held[c] < quota[c] && (!claimed || slices.Contains(claims[c], i)) && (best == "" || rank(c, i) > rank(best, i)) {
				best = c
			}
		}
		if best != "" {
			owner[i] = best
			held[best]++
		}
	}
	for i := range p {
		pick(i, true)
	}
	for i := range p {
		if owner[i] == "" {
			pick(i, false)
		}
	}
	var mine []int
	for i, o := range owner {
		if o == member {
			mine = append(mine, i)
		}
	}
	return mine
}

// shares returns how many partitions of p each of members gets: p/N, and
// one more for the p%N members that claim the most, then by name.
func shares(members []string, claims map[string][]int, p int) map[string]int {
	valid := func(c string) int {
		n := 0
		for _, i := range claims[c] {
			if i >= 0 && i < p {
				n++
			}
		}
		return n
	}
	order := slices.Clone(members) // sorted by name
	slices.SortStableFunc(order, func(a, b string) int { return cmp.Compare(valid(b), valid(a)) })
	q := make(map[string]int, len(order))
	for k, c := range order {
		q[c] = p / len(order)
		if k < p%len(order) {
			q[c]++
		}
	}
	return q
}

// rank is a member's weight for partition i.
func rank(member string, i int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(member))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(i)))
	return h.Sum64()
}
