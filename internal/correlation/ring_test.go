package correlation

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// ringValue is a value of group g with member m.
type ringValue struct{ g, m int }

// ringKey is a value's key (m >= 0) or its group's (m = -1).
type ringKey struct{ g, m int }

type standingClock struct{ t time.Time }

func (c *standingClock) Now() time.Time { return c.t }

// membersInOrder reads a group's ring from its least recently seen member.
func membersInOrder(g *group[int]) []int {
	n := len(g.members)
	out := make([]int, 0, n)
	for i := range n {
		out = append(out, g.members[(g.head+i)%n])
	}
	return out
}

// TestMembersRing checks a group's members against a plain slice, least
// recently seen first, over random sequences: MaxMembers 1 to 4, caches
// of 1 to 3 groups (groups forgotten, their nodes reused), windows that
// lapse, and hashes that collide on purpose. A member seen again becomes
// the most recent; a new member of a full group replaces the least
// recently seen and the value is combined.
func TestMembersRing(t *testing.T) {
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 7))
		maxMembers, window := 1+r.IntN(4), time.Duration(r.IntN(3))*time.Second
		groups, members := 1+r.IntN(3), 1+r.IntN(6)
		clk := &standingClock{t: time.Unix(1000, 0)}
		keyer := func(of func(ringValue) ringKey) Keyer[ringValue, ringKey] {
			return Keyer[ringValue, ringKey]{
				Hash:  func(v ringValue) uint64 { k := of(v); return uint64(k.g*131+k.m) % 3 },
				Match: func(v ringValue, k *ringKey) bool { return *k == of(v) },
				Make:  of,
			}
		}
		c := New(Options[ringValue, ringKey, int, int]{
			Key:        keyer(func(v ringValue) ringKey { return ringKey(v) }),
			Group:      keyer(func(v ringValue) ringKey { return ringKey{v.g, -1} }),
			Member:     func(v ringValue) int { return v.m },
			Keep:       func(ringValue) int { return 0 },
			CacheSize:  1 + r.IntN(3),
			MaxMembers: maxMembers,
			Window:     window,
			Clock:      clk,
		})
		type modelGroup struct {
			members []int // least recently seen first
			last    time.Time
		}
		model := map[int]*modelGroup{}
		for step := range 60 {
			if r.IntN(4) == 0 {
				clk.t = clk.t.Add(time.Duration(r.IntN(3)) * time.Second)
			}
			v := ringValue{r.IntN(groups), r.IntN(members)}
			mg := model[v.g]
			if mg == nil || clk.t.After(mg.last.Add(window)) {
				mg = &modelGroup{}
				model[v.g] = mg
			}
			at := slices.Index(mg.members, v.m)
			n := len(mg.members)
			if at < 0 {
				n++
			} else {
				mg.members = slices.Delete(mg.members, at, at+1)
			}
			mg.members = append(mg.members, v.m)
			full := n >= maxMembers
			if full {
				mg.members = slices.Clone(mg.members[1:])
			}
			mg.last = clk.t

			res, p := c.Correlate(v)
			if p != nil {
				t.Fatal(p)
			}
			if res.Combined != full {
				t.Fatalf("seed %d step %d, %v: Combined = %v, want %v", seed, step, v, res.Combined, full)
			}
			g, ok := c.groups.Peek(c.group.Hash(v), func(k *ringKey) bool { return k.g == v.g })
			if !ok {
				t.Fatalf("seed %d step %d: the group of %v is not held", seed, step, v)
			}
			if got := membersInOrder(g); !slices.Equal(got, mg.members) {
				t.Fatalf("seed %d step %d, %v, MaxMembers %d: members %v (head %d of %v), want %v",
					seed, step, v, maxMembers, got, g.head, g.members, mg.members)
			}
			// The cache forgets groups (colliding hashes together): so
			// does the model.
			for mg := range model {
				if _, ok := c.groups.Peek(c.group.Hash(ringValue{mg, 0}), func(k *ringKey) bool { return k.g == mg }); !ok {
					delete(model, mg)
				}
			}
		}
	}
}
