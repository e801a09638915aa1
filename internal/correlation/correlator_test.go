package correlation_test

import (
	"fmt"
	"hash/maphash"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/time/rate"

	"github.com/heraldgo/herald/internal/correlation"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// event is a value with a count and a time of its own, as the Kubernetes
// adapter's events have, and an id that only Keep keeps.
type event struct {
	Object, Reason, Message string
	Count                   int
	At                      time.Time
	ID                      string
}

type key struct{ Object, Reason, Message string }

// kept is what Keep keeps of an event.
type kept struct{ ID string }

// clock advances by step on every reading and counts its readings; it
// panics while armed.
type clock struct {
	t     time.Time
	step  time.Duration
	reads int
	armed bool
}

func (c *clock) Now() time.Time {
	if c.armed {
		panic("clock exploded")
	}
	c.t = c.t.Add(c.step)
	c.reads++
	return c.t
}

var seed = maphash.MakeSeed()

func hashOf(k key) uint64 { return maphash.Comparable(seed, k) }

// keyer is the Keyer of the key function of, with hash.
func keyer(hash func(key) uint64, of func(event) key) correlation.Keyer[event, key] {
	return correlation.Keyer[event, key]{
		Hash:  func(e event) uint64 { return hash(of(e)) },
		Match: func(e event, k *key) bool { return *k == of(e) },
		Make:  of,
	}
}

// options is the adapter's shape on event: Seed from the event, Keep of
// its id, a spam bucket per object, groups by object and reason.
func options(clk correlation.Clock, hash func(key) uint64) correlation.Options[event, key, string, kept] {
	return correlation.Options[event, key, string, kept]{
		Key:    keyer(hash, func(e event) key { return key{e.Object, e.Reason, e.Message} }),
		Group:  keyer(hash, func(e event) key { return key{Object: e.Object, Reason: e.Reason} }),
		Member: func(e event) string { return e.Message },
		Combine: func(e event, now time.Time) event {
			return event{Object: e.Object, Reason: e.Reason, Message: "combined: " + e.Message, Count: 1, At: now, ID: "combined"}
		},
		Spam:       keyer(hash, func(e event) key { return key{Object: e.Object} }),
		Seed:       func(e event, _ time.Time) (int, time.Time) { return e.Count, e.At },
		Keep:       func(e event) kept { return kept{e.ID} },
		SpamClock:  true,
		CacheSize:  4,
		MaxMembers: 3,
		Window:     time.Minute,
		Burst:      2,
		Rate:       rate.Limit(1.0 / 60),
		Clock:      clk,
	}
}

func TestSeedAndKeep(t *testing.T) {
	c := correlation.New(options(&clock{t: t0}, hashOf))
	at := t0.Add(-time.Hour)
	e := event{Object: "pod", Reason: "R", Message: "m", Count: 5, At: at, ID: "id-1"}
	r, p := c.Correlate(e)
	if p != nil || r.Count != 5 || !r.First.Equal(at) {
		t.Fatalf("first occurrence: Count, First, panic = %d, %v, %v; want 5, %v, nil", r.Count, r.First, p, at)
	}
	e.ID = "id-2"
	r, _ = c.Correlate(e)
	want := correlation.Observation[kept]{Count: 5, First: at, Last: kept{"id-1"}}
	if diff := cmp.Diff(want, r.Previous); diff != "" || r.Count != 6 {
		t.Errorf("repeat: Count = %d, want 6; Previous mismatch (-want +got):\n%s", r.Count, diff)
	}
}

// TestSpamClock: with SpamClock the clock is read twice per call and the
// spam bucket is taken at the second reading; without, once.
func TestSpamClock(t *testing.T) {
	for _, spamClock := range []bool{false, true} {
		t.Run(fmt.Sprint("SpamClock=", spamClock), func(t *testing.T) {
			clk := &clock{t: t0, step: time.Second}
			o := options(clk, hashOf)
			o.SpamClock, o.Burst, o.Rate = spamClock, 1, 0.5 // a token every 2 s
			c := correlation.New(o)
			e := event{Object: "pod", Reason: "R", Message: "m", Count: 1}
			c.Correlate(e)
			r, _ := c.Correlate(e)
			readsPerCall, skip := 1, true // 1 s between the bucket's readings: half a token
			if spamClock {
				readsPerCall, skip = 2, false // 2 s: a token
			}
			if clk.reads != 2*readsPerCall || r.Skip != skip {
				t.Errorf("2 calls: %d readings, second Skip = %v; want %d, %v", clk.reads, r.Skip, 2*readsPerCall, skip)
			}
		})
	}
}

// script is events that fill groups, evict entries (4 per cache) and run
// out of tokens, with the clock steps before them.
func script(n int) ([]event, []time.Duration) {
	rng := rand.New(rand.NewPCG(3, 4))
	es := make([]event, n)
	steps := make([]time.Duration, n)
	for i := range es {
		es[i] = event{
			Object:  fmt.Sprint("o", rng.IntN(3)),
			Reason:  fmt.Sprint("r", rng.IntN(2)),
			Message: fmt.Sprint("m", rng.IntN(4)),
			Count:   1 + rng.IntN(2),
			ID:      fmt.Sprint("id-", i),
		}
		steps[i] = []time.Duration{0, 0, 7 * time.Second, 31 * time.Second}[rng.IntN(4)]
	}
	return es, steps
}

// TestPanicLeavesNoTrace arms each function the adapter passes, including
// the clock's second reading, to panic during one call in five: that call
// returns the panic, naming the function, and a zero Result, and a twin
// that never saw it gives the same results for every later event and the
// same Stats but Panics.
func TestPanicLeavesNoTrace(t *testing.T) {
	tests := []struct {
		name string
		fn   correlation.Func // what the Panic names
		arm  func(o *correlation.Options[event, key, string, kept], clk *clock, boom func())
	}{
		{"key", correlation.FuncKey, func(o *correlation.Options[event, key, string, kept], _ *clock, boom func()) {
			f := o.Key.Hash
			o.Key.Hash = func(e event) uint64 { boom(); return f(e) }
		}},
		{"group", correlation.FuncGroup, func(o *correlation.Options[event, key, string, kept], _ *clock, boom func()) {
			f := o.Group.Hash
			o.Group.Hash = func(e event) uint64 { boom(); return f(e) }
		}},
		{"member", correlation.FuncMember, func(o *correlation.Options[event, key, string, kept], _ *clock, boom func()) {
			f := o.Member
			o.Member = func(e event) string { boom(); return f(e) }
		}},
		{"combine", correlation.FuncCombine, func(o *correlation.Options[event, key, string, kept], _ *clock, boom func()) {
			f := o.Combine
			o.Combine = func(e event, now time.Time) event { boom(); return f(e, now) }
		}},
		{"spam", correlation.FuncSpam, func(o *correlation.Options[event, key, string, kept], _ *clock, boom func()) {
			f := o.Spam.Hash
			o.Spam.Hash = func(e event) uint64 { boom(); return f(e) }
		}},
		{"second clock reading", correlation.FuncClock, func(o *correlation.Options[event, key, string, kept], clk *clock, boom func()) {
			// Arm the clock once the spam key is known: only the spam
			// reading is left.
			f := o.Spam.Hash
			o.Spam.Hash = func(e event) uint64 {
				defer func() { clk.armed = boomArmed(boom) }()
				return f(e)
			}
		}},
	}
	es, steps := script(500)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			armed := false
			boom := func() {
				if armed {
					panic(tc.name + " exploded")
				}
			}
			clk, twinClk := &clock{t: t0}, &clock{t: t0}
			o := options(clk, hashOf)
			tc.arm(&o, clk, boom)
			c, twin := correlation.New(o), correlation.New(options(twinClk, hashOf))
			panics := 0
			for i, e := range es {
				clk.t = clk.t.Add(steps[i])
				twinClk.t = clk.t
				armed = i%5 == 4
				got, p := c.Correlate(e)
				armed, clk.armed = false, false
				if p != nil {
					want := correlation.Panic{Func: tc.fn, Value: tc.name + " exploded"}
					if tc.fn == correlation.FuncClock {
						want.Value = "clock exploded" // the clock's own
					}
					if *p != want {
						t.Fatalf("event %d: Correlate's panic = %+v, want %+v", i, *p, want)
					}
					if diff := cmp.Diff(correlation.Result[event, kept]{}, got); diff != "" {
						t.Fatalf("event %d: a panic and a Result (-want +got):\n%s", i, diff)
					}
					panics++
					continue
				}
				want, _ := twin.Correlate(e)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("event %d after %d panics: differs from the twin (-twin +got):\n%s", i, panics, diff)
				}
			}
			if panics < 10 {
				t.Fatalf("only %d calls panicked: the script does not exercise %s", panics, tc.name)
			}
			want := twin.Stats()
			want.Panics = uint64(panics)
			if diff := cmp.Diff(want, c.Stats()); diff != "" {
				t.Errorf("Stats() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// boomArmed reports whether boom would panic.
func boomArmed(boom func()) (armed bool) {
	defer func() { armed = recover() != nil }()
	boom()
	return false
}

// TestCollidingHashes runs the same script with real hashes and with one
// hash for every key, in caches big enough that nothing is forgotten (a
// shared hash changes only which key is forgotten first): every result is
// the same.
func TestCollidingHashes(t *testing.T) {
	es, steps := script(500)
	clk, zeroClk := &clock{t: t0}, &clock{t: t0}
	o, zo := options(clk, hashOf), options(zeroClk, func(key) uint64 { return 0 })
	o.CacheSize, zo.CacheSize = 64, 64
	c, zero := correlation.New(o), correlation.New(zo)
	for i, e := range es {
		clk.t = clk.t.Add(steps[i])
		zeroClk.t = clk.t
		want, _ := c.Correlate(e)
		got, _ := zero.Correlate(e)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("event %d: one hash for all keys changes the result (-real +one hash):\n%s", i, diff)
		}
		if i%7 == 0 {
			k := key{e.Object, e.Reason, e.Message}
			obs := correlation.Observation[kept]{Count: i % 3, First: clk.t, Last: kept{"stored"}}
			match, make := func(s *key) bool { return *s == k }, func() key { return k }
			c.Stored(hashOf(k), match, make, obs)
			zero.Stored(0, match, make, obs)
		}
	}
	if s := c.Stats(); s.Combined == 0 || s.Skipped == 0 || s.Repeats == 0 {
		t.Errorf("Stats() = %+v: the script misses a path", s)
	}
}

func TestNewPanicsOnIncompleteOptions(t *testing.T) {
	full := options(&clock{t: t0}, hashOf)
	tests := []struct {
		name  string
		tweak func(o *correlation.Options[event, key, string, kept])
	}{
		{"no Key", func(o *correlation.Options[event, key, string, kept]) { o.Key.Match = nil }},
		{"no Keep", func(o *correlation.Options[event, key, string, kept]) { o.Keep = nil }},
		{"no Clock", func(o *correlation.Options[event, key, string, kept]) { o.Clock = nil }},
		{"no CacheSize", func(o *correlation.Options[event, key, string, kept]) { o.CacheSize = 0 }},
		{"Group without Member", func(o *correlation.Options[event, key, string, kept]) { o.Member = nil }},
		{"Group without Make", func(o *correlation.Options[event, key, string, kept]) { o.Group.Make = nil }},
		{"Spam without Match", func(o *correlation.Options[event, key, string, kept]) { o.Spam.Match = nil }},
		{"Group without MaxMembers", func(o *correlation.Options[event, key, string, kept]) { o.MaxMembers = 0 }},
		{"Spam without Burst", func(o *correlation.Options[event, key, string, kept]) { o.Burst = 0 }},
		{"Spam without Rate", func(o *correlation.Options[event, key, string, kept]) { o.Rate = 0 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := full
			tc.tweak(&o)
			err := func() (err error) {
				defer func() {
					if p := recover(); p != nil {
						err = fmt.Errorf("%v", p)
					}
				}()
				correlation.New(o)
				return nil
			}()
			if err == nil {
				t.Error("New did not panic")
			}
		})
	}
}

// TestNewRefusesSpamRates: the spam buckets are ratelimit.Limiter's core,
// which ratelimit.New gives positive rates only; a caller maps others first.
func TestNewRefusesSpamRates(t *testing.T) {
	tests := []struct {
		name string
		rate rate.Limit
		want bool // panics
	}{
		{"positive", 1, false},
		{"rate.Inf", rate.Inf, false},
		{"zero", 0, true},
		{"negative", -1, true},
		{"NaN", rate.Limit(math.NaN()), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := options(&clock{t: t0}, hashOf)
			o.Rate = tc.rate
			got := func() (p any) {
				defer func() { p = recover() }()
				correlation.New(o)
				return nil
			}()
			if (got != nil) != tc.want {
				t.Errorf("New with Rate %v panicked with %v, want a panic: %v", tc.rate, got, tc.want)
			}
		})
	}
}
