package correlate_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/heraldgo/herald/correlate"
)

// event is a generic stand-in for a Kubernetes event: the fields client-go
// keys on, by kind of key.
type event struct {
	Source, Object, FieldPath, Reason, Message string
}

type key struct {
	Source, Object, FieldPath, Reason, Message string
}

func eventKey(e event) key { return key(e) }

// byReason groups events that differ only in message (and field path), as
// client-go's EventAggregatorByReasonFunc does.
func byReason(e event) (key, key) {
	return key{Source: e.Source, Object: e.Object, Reason: e.Reason}, key{Message: e.Message}
}

// perObject is client-go's default spam key: source and object.
func perObject(e event) key { return key{Source: e.Source, Object: e.Object} }

func combine(e event, _ time.Time) event {
	e.Message = correlate.CombinedPrefix + e.Message
	return e
}

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time       { return c.t }
func (c *fakeClock) Step(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *fakeClock                { return &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)} }

// intervalClock advances by a fixed step on every reading, as client-go's
// SimpleIntervalClock does.
type intervalClock struct {
	t    time.Time
	step time.Duration
}

func (c *intervalClock) Now() time.Time { c.t = c.t.Add(c.step); return c.t }

func newCorrelator(clk correlate.Clock, tweak func(*correlate.Options[event, key])) *correlate.Correlator[event, key] {
	opts := correlate.Options[event, key]{Group: byReason, Combine: combine, Spam: perObject, Clock: clk}
	if tweak != nil {
		tweak(&opts)
	}
	return correlate.New(eventKey, opts)
}

func mustCorrelate(t *testing.T, c *correlate.Correlator[event, key], e event) correlate.Result[event, key] {
	t.Helper()
	r, err := c.Correlate(e)
	if err != nil {
		t.Fatalf("Correlate(%v) error = %v", e, err)
	}
	return r
}

func similar(n int) []event {
	var es []event
	for i := range n {
		es = append(es, event{Source: "kubelet", Object: "pod/web-0", Reason: "Failed", Message: fmt.Sprintf("message %d", i)})
	}
	return es
}

func repeat(e event, n int) []event {
	var es []event
	for range n {
		es = append(es, e)
	}
	return es
}

var base = event{Source: "kubelet", Object: "pod/web-0", FieldPath: "spec.containers{app}", Reason: "BackOff", Message: "back-off restarting"}

// TestClientGoScenarios re-expresses client-go's TestEventCorrelator: the
// previous events, then one more event, and what the correlator decides
// for it. The clock advances by interval on every reading.
func TestClientGoScenarios(t *testing.T) {
	tests := []struct {
		name      string
		previous  []event
		next      event
		interval  time.Duration
		wantCount int
		combined  bool
		skip      bool
	}{
		{"single", nil, base, time.Second, 1, false, false},
		{"the same event twice", []event{base}, base, time.Second, 2, false, false},
		{"11 identical 30 s apart are counted, not combined", repeat(base, 10), base, 30 * time.Second, 11, false, false},
		{"27 identical 1 s apart: the last is spam", repeat(base, 26), base, time.Second, 27, false, true},
		{"30 unique, then a new one", similar(30), event{Source: "kubelet", Object: "pod/other", Reason: "New", Message: "x"}, time.Second, 1, false, false},
		{"9 similar, then one more: combined", similar(9), similar(10)[9], time.Second, 1, true, false},
		{"10 similar, then one more: combined again", similar(10), similar(11)[10], time.Second, 2, true, false},
		{"a different member key is not combined", []event{base}, func() event { e := base; e.FieldPath = "spec.containers{sidecar}"; return e }(), time.Second, 1, false, false},
		{"9 similar spaced beyond the window are not combined", similar(9), similar(10)[9], 601 * time.Second / 2, 1, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCorrelator(&intervalClock{t: time.Unix(1000, 0), step: tc.interval}, nil)
			for _, e := range tc.previous {
				mustCorrelate(t, c, e)
			}
			r := mustCorrelate(t, c, tc.next)
			if r.Count != tc.wantCount || r.Combined != tc.combined || r.Skip != tc.skip {
				t.Errorf("Correlate(%v) = count %d, combined %v, skip %v; want %d, %v, %v", tc.next, r.Count, r.Combined, r.Skip, tc.wantCount, tc.combined, tc.skip)
			}
			if tc.combined && r.Event.Message != correlate.CombinedPrefix+tc.next.Message {
				t.Errorf("combined message %q", r.Event.Message)
			}
		})
	}
}

// TestSpamKeyChoice re-expresses client-go's TestEventSpamFilter with a
// burst of 1: the default key (the object) refuses a second event of
// another reason; a key with the reason lets it through but still refuses
// the same reason with another message.
func TestSpamKeyChoice(t *testing.T) {
	first := event{Source: "kubelet", Object: "pod/web-0", Reason: "Started", Message: "a"}
	otherReason := event{Source: "kubelet", Object: "pod/web-0", Reason: "Killed", Message: "a"}
	otherMessage := event{Source: "kubelet", Object: "pod/web-0", Reason: "Started", Message: "b"}
	tests := []struct {
		name string
		spam func(event) key
		next event
		skip bool
	}{
		{"by object: another reason is spam", perObject, otherReason, true},
		{"by object and reason: another reason passes", func(e event) key { return key{Source: e.Source, Object: e.Object, Reason: e.Reason} }, otherReason, false},
		{"by object and reason: same reason, another message is spam", func(e event) key { return key{Source: e.Source, Object: e.Object, Reason: e.Reason} }, otherMessage, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCorrelator(newClock(), func(o *correlate.Options[event, key]) { o.Spam, o.Burst = tc.spam, 1 })
			if r := mustCorrelate(t, c, first); r.Skip {
				t.Fatal("first event skipped")
			}
			if r := mustCorrelate(t, c, tc.next); r.Skip != tc.skip {
				t.Errorf("Skip = %v, want %v", r.Skip, tc.skip)
			}
		})
	}
}

// TestSkippedStillCount is client-go's probe: 30 identical events at one
// instant, 25 pass and 5 are skipped; after 301 s the next passes with a
// count of 32 that includes the skipped ones.
func TestSkippedStillCount(t *testing.T) {
	clk := newClock()
	c := newCorrelator(clk, nil)
	passed, skipped := 0, 0
	for range 31 {
		if mustCorrelate(t, c, base).Skip {
			skipped++
		} else {
			passed++
		}
	}
	if passed != 25 || skipped != 6 {
		t.Fatalf("31 at one instant: %d passed, %d skipped; want 25, 6", passed, skipped)
	}
	clk.Step(301 * time.Second)
	r := mustCorrelate(t, c, base)
	if r.Skip || r.Count != 32 {
		t.Errorf("after 301 s: skip %v, count %d; want false, 32", r.Skip, r.Count)
	}
	if s := c.Stats(); s.Correlated != 32 || s.Skipped != 6 || s.New != 1 || s.Repeats != 31 {
		t.Errorf("Stats() = %+v", s)
	}
}

// TestTwelveMessages is client-go's probe: 12 distinct messages 1 s apart;
// 0-8 stand alone, 9 is combined (count 1), 10 and 11 count on it.
func TestTwelveMessages(t *testing.T) {
	clk := newClock()
	c := newCorrelator(clk, nil)
	for i, e := range similar(12) {
		clk.Step(time.Second)
		r := mustCorrelate(t, c, e)
		wantCombined, wantCount := i >= 9, 1
		if i >= 9 {
			wantCount = i - 8
		}
		if r.Combined != wantCombined || r.Count != wantCount {
			t.Errorf("message %d: combined %v count %d, want %v %d", i, r.Combined, r.Count, wantCombined, wantCount)
		}
		if wantCombined && r.Previous.Count > 0 && r.Previous.Last.Message != correlate.CombinedPrefix+"message 9" {
			t.Errorf("message %d: the repeat must update the stand-in created first, got %q", i, r.Previous.Last.Message)
		}
	}
}

func TestWindowEdge(t *testing.T) {
	for _, tc := range []struct {
		gap      time.Duration
		combined bool
	}{{600 * time.Second, true}, {601 * time.Second, false}} {
		t.Run(tc.gap.String(), func(t *testing.T) {
			clk := newClock()
			c := newCorrelator(clk, nil)
			es := similar(10)
			for _, e := range es[:9] {
				mustCorrelate(t, c, e)
			}
			clk.Step(tc.gap)
			if r := mustCorrelate(t, c, es[9]); r.Combined != tc.combined {
				t.Errorf("10th similar event %v after the 9th: combined %v, want %v", tc.gap, r.Combined, tc.combined)
			}
		})
	}
}

// TestLeastRecentlySeenMemberIsForgotten pins herald's deterministic choice
// where client-go picks at random: when a group is full, the member seen
// longest ago is forgotten, so a repeat of it combines again while a repeat
// of a recent member is counted on its own.
func TestLeastRecentlySeenMemberIsForgotten(t *testing.T) {
	c := newCorrelator(newClock(), func(o *correlate.Options[event, key]) { o.MaxMembers = 3; o.Rate = rate.Inf })
	es := similar(4)
	mustCorrelate(t, c, es[0])
	mustCorrelate(t, c, es[1])
	mustCorrelate(t, c, es[0]) // es[0] is now more recent than es[1]
	if r := mustCorrelate(t, c, es[2]); !r.Combined {
		t.Fatal("third distinct member did not combine")
	}
	// es[1] was forgotten: seeing it again fills the group again.
	if r := mustCorrelate(t, c, es[1]); !r.Combined || r.Count != 2 {
		t.Errorf("forgotten member: combined %v count %d, want true 2", r.Combined, r.Count)
	}
	// es[2] is remembered: it is counted on its own key.
	if r := mustCorrelate(t, c, es[2]); r.Combined || r.Count != 1 {
		t.Errorf("remembered member: combined %v count %d, want false 1", r.Combined, r.Count)
	}
}

func TestEvictionForgetsCountAndBucket(t *testing.T) {
	c := newCorrelator(newClock(), func(o *correlate.Options[event, key]) { o.CacheSize = 2; o.Burst = 1 })
	a := event{Source: "s", Object: "a", Reason: "R", Message: "m"}
	b := event{Source: "s", Object: "b", Reason: "R", Message: "m"}
	d := event{Source: "s", Object: "d", Reason: "R", Message: "m"}
	mustCorrelate(t, c, a)
	if r := mustCorrelate(t, c, a); r.Count != 2 || !r.Skip {
		t.Fatalf("repeat: count %d skip %v, want 2 true (burst 1)", r.Count, r.Skip)
	}
	mustCorrelate(t, c, b)
	mustCorrelate(t, c, d) // a is the least recently used: forgotten
	r := mustCorrelate(t, c, a)
	if r.Count != 1 || r.Skip || r.Previous.Count != 0 {
		t.Errorf("after eviction: count %d skip %v previous %d, want a new key with a full bucket", r.Count, r.Skip, r.Previous.Count)
	}
}

func TestStoredReplacesTheObservation(t *testing.T) {
	clk := newClock()
	c := newCorrelator(clk, nil)
	mustCorrelate(t, c, base)
	stored := base
	stored.Message = "as the sink stored it"
	first := clk.Now().Add(-time.Hour)
	c.Stored(eventKey(base), correlate.Observation[event]{Count: 7, First: first, Last: stored})
	r := mustCorrelate(t, c, base)
	if r.Count != 8 || !r.First.Equal(first) || r.Previous.Last != stored {
		t.Errorf("after Stored: count %d first %v last %v; want 8, %v, %v", r.Count, r.First, r.Previous.Last, first, stored)
	}
}

func TestSeed(t *testing.T) {
	at := time.Unix(42, 0)
	c := newCorrelator(newClock(), func(o *correlate.Options[event, key]) {
		o.Seed = func(event, time.Time) (int, time.Time) { return 5, at }
	})
	if r := mustCorrelate(t, c, base); r.Count != 5 || !r.First.Equal(at) {
		t.Errorf("first occurrence: count %d first %v, want 5 %v", r.Count, r.First, at)
	}
	if r := mustCorrelate(t, c, base); r.Count != 6 {
		t.Errorf("repeat: count %d, want 6", r.Count)
	}
}

func TestPanickingFunctionsAreErrors(t *testing.T) {
	boom := func(e event) bool { return e.Message == "boom" }
	tests := map[string]func(*correlate.Options[event, key]){
		"group": func(o *correlate.Options[event, key]) {
			o.Group = func(e event) (key, key) {
				if boom(e) {
					panic("group")
				}
				return byReason(e)
			}
		},
		"spam": func(o *correlate.Options[event, key]) {
			o.Spam = func(e event) key {
				if boom(e) {
					panic("spam")
				}
				return perObject(e)
			}
		},
		"seed": func(o *correlate.Options[event, key]) {
			o.Seed = func(e event, now time.Time) (int, time.Time) {
				if boom(e) {
					panic("seed")
				}
				return 1, now
			}
		},
	}
	for name, tweak := range tests {
		t.Run(name, func(t *testing.T) {
			c := newCorrelator(newClock(), tweak)
			bad := base
			bad.Message = "boom"
			if _, err := c.Correlate(bad); !errors.Is(err, correlate.ErrPanic) {
				t.Errorf("Correlate(panicking) error = %v, want ErrPanic", err)
			}
			if r := mustCorrelate(t, c, base); r.Count != 1 {
				t.Errorf("after a panic: count %d, want 1 (still usable)", r.Count)
			}
			if s := c.Stats(); s.Panics != 1 {
				t.Errorf("Stats().Panics = %d, want 1", s.Panics)
			}
		})
	}
}

func TestConcurrentCorrelate(t *testing.T) {
	c := newCorrelator(newClock(), func(o *correlate.Options[event, key]) { o.Rate = rate.Inf })
	const goroutines, each = 8, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				e := base
				e.Object = fmt.Sprint("pod-", i%10)
				_ = g
				if _, err := c.Correlate(e); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for i := range 10 {
		e := base
		e.Object = fmt.Sprint("pod-", i)
		if r := mustCorrelate(t, c, e); r.Count != goroutines*each/10+1 {
			t.Errorf("pod-%d count %d, want %d", i, r.Count, goroutines*each/10+1)
		}
	}
}

func TestNewPanicsOnProgrammerErrors(t *testing.T) {
	for name, f := range map[string]func(){
		"nil key":        func() { correlate.New[event, key](nil, correlate.Options[event, key]{}) },
		"negative cache": func() { correlate.New(eventKey, correlate.Options[event, key]{CacheSize: -1}) },
		"negative rate":  func() { correlate.New(eventKey, correlate.Options[event, key]{Rate: -1}) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if p := recover(); p == nil {
					t.Error("no panic")
				}
			}()
			f()
		})
	}
}
