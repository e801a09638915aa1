package correlation

// MembersOf returns the members of the group whose key has hash h and
// which match accepts, least recently seen first, and whether the group
// is held: for tests of the ring, without marking the group used.
func (c *Correlator[T, K, M, L]) MembersOf(h uint64, match func(*K) bool) ([]M, bool) {
	g, ok := c.groups.Peek(h, match)
	if !ok {
		return nil, false
	}
	n := len(g.members)
	out := make([]M, 0, n)
	for i := range n {
		out = append(out, g.members[(g.head+i)%n])
	}
	return out, true
}
