package correlation_test

import (
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/heraldgo/herald/internal/correlation"
)

// TestMembersRing checks a group's members against a plain slice, least
// recently seen first, over random sequences: MaxMembers 1 to 4, caches
// of 1 to 3 groups (groups forgotten, their nodes reused), windows that
// lapse, and hashes that collide on purpose. A member seen again becomes
// the most recent; a new member of a full group replaces the least
// recently seen and the value is combined.
func TestMembersRing(t *testing.T) {
	// Three hashes for every key, the same in every run, so that a
	// failing seed fails again.
	collide := func(k key) uint64 {
		return uint64(crc32.ChecksumIEEE([]byte(k.Object+"\x00"+k.Reason+"\x00"+k.Message))) % 3
	}
	groupOf := func(obj string) (uint64, func(*key) bool) {
		k := key{Object: obj, Reason: "R"}
		return collide(k), func(s *key) bool { return *s == k }
	}
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 7))
		maxMembers, window := 1+r.IntN(4), time.Duration(r.IntN(3))*time.Second
		groups, members := 1+r.IntN(3), 1+r.IntN(6)
		clk := &clock{t: t0} // stands still unless the test moves it
		o := options(clk, collide)
		o.Spam, o.Combine = correlation.Keyer[event, key]{}, nil
		o.CacheSize, o.MaxMembers, o.Window = 1+r.IntN(3), maxMembers, window
		c := correlation.New(o)
		type modelGroup struct {
			members []string // least recently seen first
			last    time.Time
		}
		model := map[string]*modelGroup{}
		for step := range 60 {
			if r.IntN(4) == 0 {
				clk.t = clk.t.Add(time.Duration(r.IntN(3)) * time.Second)
			}
			v := event{Object: strconv.Itoa(r.IntN(groups)), Reason: "R", Message: strconv.Itoa(r.IntN(members)), Count: 1}
			mg := model[v.Object]
			if mg == nil || clk.t.After(mg.last.Add(window)) {
				mg = &modelGroup{}
				model[v.Object] = mg
			}
			at := slices.Index(mg.members, v.Message)
			n := len(mg.members)
			if at < 0 {
				n++
			} else {
				mg.members = slices.Delete(mg.members, at, at+1)
			}
			mg.members = append(mg.members, v.Message)
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
				t.Fatalf("seed %d step %d, %+v: Combined = %v, want %v", seed, step, v, res.Combined, full)
			}
			got, ok := c.MembersOf(groupOf(v.Object))
			if !ok {
				t.Fatalf("seed %d step %d: the group of %+v is not held", seed, step, v)
			}
			if !slices.Equal(got, mg.members) {
				t.Fatalf("seed %d step %d, %+v, MaxMembers %d: members %q, want %q",
					seed, step, v, maxMembers, got, mg.members)
			}
			// The cache forgets groups (colliding hashes together): so
			// does the model.
			for obj := range model {
				if _, ok := c.MembersOf(groupOf(obj)); !ok {
					delete(model, obj)
				}
			}
		}
	}
}
