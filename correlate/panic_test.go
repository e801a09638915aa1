package correlate_test

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/heraldgo/herald/correlate"
)

// armedClock is a fake clock that panics on every reading while armed.
type armedClock struct {
	now   time.Time
	armed *bool
}

func (c *armedClock) Now() time.Time {
	if *c.armed {
		panic("clock exploded")
	}
	return c.now
}

// TestPanicLeavesNoTrace poisons one Correlate call in ten of a script
// that fills groups, evicts entries and runs out of tokens: the function
// under test panics during that call. The call must return ErrPanic and a
// zero Result, and leave no trace: a twin Correlator that never saw the
// poisoned events gives the same Result for every later event, and the
// same Stats but for Panics. Whatever a call changes (a group's members,
// a count, a token, the order of the caches) happens only once every
// function it calls has returned.
func TestPanicLeavesNoTrace(t *testing.T) {
	type funcs struct {
		key  func(event) key
		opts correlate.Options[event, key]
	}
	tests := []struct {
		name string
		fn   string                      // how the error names the function
		arm  func(f *funcs, boom func()) // wraps one function to call boom first
	}{
		{"key", "the key function", func(f *funcs, boom func()) { k := f.key; f.key = func(e event) key { boom(); return k(e) } }},
		{"group", "Options.Group", func(f *funcs, boom func()) {
			g := f.opts.Group
			f.opts.Group = func(e event) (key, key) { boom(); return g(e) }
		}},
		{"combine", "Options.Combine", func(f *funcs, boom func()) {
			c := f.opts.Combine
			f.opts.Combine = func(e event, now time.Time) event { boom(); return c(e, now) }
		}},
		{"spam", "Options.Spam", func(f *funcs, boom func()) {
			s := f.opts.Spam
			f.opts.Spam = func(e event) key { boom(); return s(e) }
		}},
		{"clock", "Options.Clock", nil}, // the armed clock panics by itself
	}
	rng := rand.New(rand.NewPCG(1, 2))
	script := make([]event, 400)
	steps := make([]time.Duration, len(script))
	for i := range script {
		b := byte(rng.IntN(64))
		if rng.IntN(5) > 0 {
			b &= 0b110001 // mostly two groups, so that they fill
		}
		script[i] = fuzzEvent(b)
		steps[i] = []time.Duration{0, 0, 7 * time.Second, 31 * time.Second}[rng.IntN(4)]
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			armed := false
			boom := func() {
				if armed {
					panic(tc.name + " exploded")
				}
			}
			build := func(clk *armedClock, poisoned bool) *correlate.Correlator[event, key] {
				f := funcs{key: eventKey, opts: correlate.Options[event, key]{
					Group: byReason, Combine: combine, Spam: perObject, Clock: clk,
					CacheSize: fuzzCacheSize, MaxMembers: fuzzMaxMembers, Burst: fuzzBurst, Window: fuzzWindow, Rate: fuzzRate,
				}}
				if poisoned && tc.arm != nil {
					tc.arm(&f, boom)
				}
				return correlate.New(f.key, f.opts)
			}
			never := false
			poisonedClock, twinClock := &armedClock{now: t0, armed: &never}, &armedClock{now: t0, armed: &never}
			if tc.arm == nil {
				poisonedClock.armed = &armed
			}
			poisoned, twin := build(poisonedClock, true), build(twinClock, false)

			panics := 0
			for i, e := range script {
				poisonedClock.now = poisonedClock.now.Add(steps[i])
				twinClock.now = poisonedClock.now
				armed = i%10 == 9
				got, err := poisoned.Correlate(e)
				armed = false
				if err != nil {
					want := "correlate: panic in " + tc.fn + ": " + tc.name + " exploded"
					if !errors.Is(err, correlate.ErrPanic) || err.Error() != want {
						t.Fatalf("event %d: Correlate error = %v, want %q, wrapping ErrPanic", i, err, want)
					}
					if diff := cmp.Diff(correlate.Result[event, key]{}, got); diff != "" {
						t.Fatalf("event %d: Correlate returned an error and a Result (-want +got):\n%s", i, diff)
					}
					panics++
					continue // the twin never sees it
				}
				// Not poisoned, or the function was not called for this
				// event: the twin sees it too.
				want, _ := twin.Correlate(e)
				if !sameResult(want, got) {
					t.Fatalf("event %d after %d poisoned calls: Correlate(%v) differs from the twin's (-twin +poisoned):\n%s",
						i, panics, e, cmp.Diff(want, got))
				}
			}
			if panics < 10 {
				t.Fatalf("only %d poisoned calls panicked: the script does not exercise %s", panics, tc.name)
			}
			want := twin.Stats()
			want.Panics = uint64(panics)
			if diff := cmp.Diff(want, poisoned.Stats()); diff != "" {
				t.Errorf("Stats() after %d panics differs from the twin's (-want +got):\n%s", panics, diff)
			}
		})
	}
}
