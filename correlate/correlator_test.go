package correlate_test

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/time/rate"

	"github.com/heraldgo/herald/correlate"
)

// event is a generic stand-in for a Kubernetes event: the fields client-go
// keys on, and the time it happened, which is in no key.
type event struct {
	Source, Object, FieldPath, Reason, Message string
	At                                         time.Time
}

// key is the key type of every key function here.
type key struct {
	Source, Object, FieldPath, Reason, Message string
}

// eventKey: an event repeats when all its fields but the time are equal.
func eventKey(e event) key {
	return key{Source: e.Source, Object: e.Object, FieldPath: e.FieldPath, Reason: e.Reason, Message: e.Message}
}

// byReason groups events that differ only in message (and field path), as
// client-go's EventAggregatorByReasonFunc does; the message is the member.
func byReason(e event) (group, member key) {
	return key{Source: e.Source, Object: e.Object, Reason: e.Reason}, key{Message: e.Message}
}

// perObject is client-go's default spam key: source and object.
func perObject(e event) key { return key{Source: e.Source, Object: e.Object} }

// perReason is the custom spam key of client-go's TestEventSpamFilter.
func perReason(e event) key { return key{Source: e.Source, Object: e.Object, Reason: e.Reason} }

// combine builds the stand-in as client-go does: the triggering event with
// the combined message, happening now.
func combine(e event, now time.Time) event {
	e.Message = correlate.CombinedPrefix + e.Message
	e.At = now
	return e
}

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func newClock() *fakeClock { return &fakeClock{now: t0} }

// intervalClock advances by step on every reading, as client-go's
// SimpleIntervalClock does, and counts its readings.
type intervalClock struct {
	t     time.Time
	step  time.Duration
	reads int
}

func (c *intervalClock) Now() time.Time {
	c.t = c.t.Add(c.step)
	c.reads++
	return c.t
}

// newCorrelator returns client-go's configuration on the event type, with
// tweak applied to the options.
func newCorrelator(clk correlate.Clock, tweak func(*correlate.Options[event, key])) *correlate.Correlator[event, key] {
	opts := correlate.Options[event, key]{Group: byReason, Combine: combine, Spam: perObject, Clock: clk}
	if tweak != nil {
		tweak(&opts)
	}
	return correlate.New(eventKey, opts)
}

func mustCorrelate(t testing.TB, c *correlate.Correlator[event, key], e event) correlate.Result[event, key] {
	t.Helper()
	r, err := c.Correlate(e)
	if err != nil {
		t.Fatalf("Correlate(%v) error = %v", e, err)
	}
	return r
}

// outcome is the part of a Result most tests check.
type outcome struct {
	Count          int
	Combined, Skip bool
	Message        string // of Result.Event
}

func outcomeOf(r correlate.Result[event, key]) outcome {
	return outcome{Count: r.Count, Combined: r.Combined, Skip: r.Skip, Message: r.Event.Message}
}

func repeat(e event, n int) []event {
	es := make([]event, n)
	for i := range es {
		es[i] = e
	}
	return es
}

// similar returns n events like e, with messages made distinct the way
// client-go's makeSimilarEvents makes them.
func similar(n int, e event) []event {
	es := repeat(e, n)
	for i := range es {
		es[i].Message = fmt.Sprintf("%s-%d-%s", e.Message, i, e.Message)
	}
	return es
}

// unique returns n events with nothing in common, as client-go's
// makeUniqueEvents does.
func unique(n int) []event {
	es := make([]event, n)
	for i := range es {
		es[i] = event{Source: "kubelet", Object: fmt.Sprint("ns-", i, "/pod-", i), Reason: fmt.Sprint("reason-", i), Message: fmt.Sprint("message-", i)}
	}
	return es
}

var (
	base         = event{Source: "kubelet", Object: "pod/web-0", FieldPath: "spec.containers{app}", Reason: "BackOff", Message: "back-off restarting"}
	similarEvent = event{Source: "kubelet", Object: "my-ns/my-pod", FieldPath: "spec.containers{container1}", Reason: "similar", Message: "similar message"}
)

// TestClientGoScenarios re-expresses client-go's TestEventCorrelator. As
// there, the clock advances by interval on every reading, including the
// test's own reading that stamps each event, and whatever is not skipped is
// fed back with Stored, as client-go's test calls UpdateState.
func TestClientGoScenarios(t *testing.T) {
	first := event{Source: "kubelet", Object: "my-ns/my-pod", FieldPath: "spec.containers{mycontainer}", Reason: "first", Message: "i am first"}
	duplicate := event{Source: "kubelet", Object: "my-ns/my-pod", FieldPath: "spec.containers{mycontainer}", Reason: "duplicate", Message: "me again"}
	uniq := event{Source: "kubelet", Object: "my-ns/my-pod", FieldPath: "spec.containers{mycontainer}", Reason: "unique", Message: "snowflake"}
	otherContainer := similarEvent
	otherContainer.FieldPath = "spec.containers{container2}"
	combined := correlate.CombinedPrefix + similarEvent.Message

	tests := []struct {
		name     string
		previous []event
		next     event
		interval time.Duration
		want     outcome
	}{
		{"create a single event", nil, first, 5 * time.Second, outcome{Count: 1, Message: first.Message}},
		{"the same event just counts", repeat(duplicate, 1), duplicate, 5 * time.Second, outcome{Count: 2, Message: duplicate.Message}},
		{"the same event just counts, even beyond MaxMembers", repeat(duplicate, 10), duplicate, 30 * time.Second, outcome{Count: 11, Message: duplicate.Message}},
		{"the same event too often is spam", repeat(duplicate, 26), duplicate, time.Second, outcome{Count: 27, Skip: true, Message: duplicate.Message}},
		{"many unique events, then a new one", unique(30), uniq, 5 * time.Second, outcome{Count: 1, Message: uniq.Message}},
		{"similar events combine", similar(9, similarEvent), similarEvent, 5 * time.Second, outcome{Count: 1, Combined: true, Message: combined}},
		{"similar events many times count the combined one", similar(10, similarEvent), similarEvent, 5 * time.Second, outcome{Count: 2, Combined: true, Message: combined}},
		{"events from different containers do not combine", repeat(otherContainer, 1), similarEvent, 5 * time.Second, outcome{Count: 1, Message: similarEvent.Message}},
		{"similar events further apart than Window do not combine", similar(9, similarEvent), similarEvent, 600 * time.Second, outcome{Count: 1, Message: similarEvent.Message}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := &intervalClock{t: t0, step: tc.interval}
			c := newCorrelator(clk, nil)
			for _, e := range tc.previous {
				e.At = clk.Now()
				if r := mustCorrelate(t, c, e); !r.Skip {
					c.Stored(eventKey(r.Event), correlate.Observation[event]{Count: r.Count, First: r.First, Last: r.Event})
				}
			}
			next := tc.next
			next.At = clk.Now()
			if diff := cmp.Diff(tc.want, outcomeOf(mustCorrelate(t, c, next))); diff != "" {
				t.Errorf("Correlate(%v) mismatch (-want +got):\n%s", tc.next, diff)
			}
		})
	}
}

// TestSpamKeyChoice re-expresses client-go's TestEventSpamFilter with a
// burst of 1: the default key (the object) refuses a second event of
// another reason; a key with the reason lets it through but still refuses
// the same reason with another message.
func TestSpamKeyChoice(t *testing.T) {
	original := event{Source: "kubelet", Object: "my-ns/my-pod", Reason: "original", Message: "i am first"}
	otherReason := event{Source: "kubelet", Object: "my-ns/my-pod", Reason: "duplicate", Message: "me again"}
	otherMessage := event{Source: "kubelet", Object: "my-ns/my-pod", Reason: "original", Message: "me again"}
	tests := []struct {
		name string
		spam func(event) key
		next event
		skip bool
	}{
		{"default key, same object: spam", perObject, otherReason, true},
		{"key with reason, another reason: passes", perReason, otherReason, false},
		{"key with reason, same reason, another message: spam", perReason, otherMessage, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := &intervalClock{t: t0, step: time.Second}
			c := newCorrelator(clk, func(o *correlate.Options[event, key]) { o.Spam, o.Burst = tc.spam, 1 })
			r := mustCorrelate(t, c, original)
			if r.Skip {
				t.Fatalf("Correlate(%v).Skip = true, want false (a full bucket)", original)
			}
			c.Stored(eventKey(r.Event), correlate.Observation[event]{Count: r.Count, First: r.First, Last: r.Event})
			if got := mustCorrelate(t, c, tc.next).Skip; got != tc.skip {
				t.Errorf("Correlate(%v).Skip = %v, want %v", tc.next, got, tc.skip)
			}
		})
	}
}

// TestClockReadOncePerCall pins how Correlate reads the clock, which
// decides its results with clocks that advance on every reading: once per
// call, and that one reading serves the group, Combine, a new key's First
// and the spam bucket.
func TestClockReadOncePerCall(t *testing.T) {
	clk := &intervalClock{t: t0, step: time.Second}
	var combineAt []time.Time
	c := newCorrelator(clk, func(o *correlate.Options[event, key]) {
		o.MaxMembers = 2
		o.Combine = func(e event, now time.Time) event { combineAt = append(combineAt, now); return e }
		o.Burst, o.Rate = 1, 0.5 // a token every 2 s
	})
	es := similar(2, base)
	first := mustCorrelate(t, c, es[0])  // reading 1: new, alone
	second := mustCorrelate(t, c, es[1]) // reading 2: combined, new
	if got, want := clk.reads, 2; got != want {
		t.Errorf("2 Correlate calls read the clock %d times, want %d", got, want)
	}
	if want := t0.Add(time.Second); !first.First.Equal(want) {
		t.Errorf("first call: First = %v, want the call's reading %v", first.First, want)
	}
	if want := []time.Time{t0.Add(2 * time.Second)}; !cmp.Equal(combineAt, want) {
		t.Errorf("Combine got times %v, want the call's reading %v", combineAt, want)
	}
	// The second call's reading is 1 s after the first's: half a token,
	// so the spam bucket (one per object) refuses it. A second reading for
	// the bucket would have found a whole token.
	if !second.Skip {
		t.Error("second call 1 s after the first, one token per 2 s: not skipped, want skipped")
	}
}

// TestSkippedStillCount is client-go's probe: 30 identical events at one
// instant, 25 pass and 5 are skipped (and a 31st); after 301 s the next
// passes with a count of 32 that includes the skipped ones.
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
	clk.Advance(301 * time.Second)
	r := mustCorrelate(t, c, base)
	if got, want := outcomeOf(r), (outcome{Count: 32, Message: base.Message}); got != want {
		t.Errorf("after 301 s: Correlate = %+v, want %+v", got, want)
	}
	want := correlate.Stats{Correlated: 32, New: 1, Repeats: 31, Skipped: 6, Carried: 6} // count 32 carries the 6 skipped
	if diff := cmp.Diff(want, c.Stats()); diff != "" {
		t.Errorf("Stats() mismatch (-want +got):\n%s", diff)
	}
}

// TestTwelveMessages is client-go's probe: 12 distinct messages 1 s apart;
// 0-8 stand alone, 9 is combined (count 1), 10 and 11 count on it, and
// their Previous is the stand-in first recorded.
func TestTwelveMessages(t *testing.T) {
	clk := newClock()
	c := newCorrelator(clk, nil)
	es := similar(12, base)
	group, _ := byReason(base)
	var standIn event
	for i, e := range es {
		clk.Advance(time.Second)
		got := mustCorrelate(t, c, e)
		want := correlate.Result[event, key]{Event: e, Key: eventKey(e), Count: 1, First: clk.Now()}
		switch {
		case i == 9:
			standIn = combine(e, clk.Now())
			want = correlate.Result[event, key]{Event: standIn, Key: group, Combined: true, Count: 1, First: clk.Now()}
		case i > 9:
			want = correlate.Result[event, key]{
				Event: combine(e, clk.Now()), Key: group, Combined: true, Count: i - 8, First: standIn.At,
				Previous: correlate.Observation[event]{Count: i - 9, First: standIn.At, Last: standIn},
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("message %d: Correlate mismatch (-want +got):\n%s", i, diff)
		}
	}
	if got, want := c.Stats().Combined, uint64(3); got != want {
		t.Errorf("Stats().Combined = %d, want %d", got, want)
	}
}

// TestWindowEdge: a group lives while the gap since its last member is at
// most Window; one nanosecond more starts it afresh.
func TestWindowEdge(t *testing.T) {
	tests := []struct {
		gap      time.Duration
		combined bool
	}{
		{600 * time.Second, true},
		{600*time.Second + time.Nanosecond, false},
		{601 * time.Second, false},
	}
	for _, tc := range tests {
		t.Run(tc.gap.String(), func(t *testing.T) {
			clk := newClock()
			c := newCorrelator(clk, nil)
			es := similar(10, base)
			for _, e := range es[:9] {
				mustCorrelate(t, c, e)
			}
			clk.Advance(tc.gap)
			if got := mustCorrelate(t, c, es[9]).Combined; got != tc.combined {
				t.Errorf("10th similar event %v after the 9th: Combined = %v, want %v", tc.gap, got, tc.combined)
			}
		})
	}
}

// TestWindowSlides: members 1 s apart keep a group alive for longer than
// Window in total, as client-go's sliding window does.
func TestWindowSlides(t *testing.T) {
	clk := newClock()
	c := newCorrelator(clk, func(o *correlate.Options[event, key]) { o.Window = 5 * time.Second; o.Rate = rate.Inf })
	es := similar(10, base)
	for _, e := range es[:9] {
		clk.Advance(time.Second)
		mustCorrelate(t, c, e)
	}
	clk.Advance(time.Second)
	if r := mustCorrelate(t, c, es[9]); !r.Combined {
		t.Error("10 members 1 s apart with a 5 s window: not combined, want combined")
	}
}

// TestLeastRecentlySeenMemberIsForgotten pins herald's deterministic choice
// where client-go picks at random: when a group is full, the member seen
// longest ago is forgotten, so a repeat of it fills the group again while a
// repeat of a recent member is counted on its own.
func TestLeastRecentlySeenMemberIsForgotten(t *testing.T) {
	c := newCorrelator(newClock(), func(o *correlate.Options[event, key]) { o.MaxMembers = 3; o.Spam = nil })
	es := similar(3, base)
	steps := []struct {
		e    event
		want outcome
	}{
		{es[0], outcome{Count: 1, Message: es[0].Message}},
		{es[1], outcome{Count: 1, Message: es[1].Message}},
		{es[0], outcome{Count: 2, Message: es[0].Message}},                              // es[0] is now more recent than es[1]
		{es[2], outcome{Count: 1, Combined: true, Message: combine(es[2], t0).Message}}, // full: es[1] is forgotten
		{es[1], outcome{Count: 2, Combined: true, Message: combine(es[1], t0).Message}}, // a new member again; es[0] is forgotten
		{es[2], outcome{Count: 1, Message: es[2].Message}},                              // remembered: counted on its own
		{es[0], outcome{Count: 3, Combined: true, Message: combine(es[0], t0).Message}},
	}
	for i, s := range steps {
		if got := outcomeOf(mustCorrelate(t, c, s.e)); got != s.want {
			t.Errorf("step %d: Correlate(%q) = %+v, want %+v", i, s.e.Message, got, s.want)
		}
	}
}

// TestGroupKeyApartFromEventKey: an event whose key equals its group's key
// (no field path, no message) is still counted apart from the group.
func TestGroupKeyApartFromEventKey(t *testing.T) {
	clk := newClock()
	c := newCorrelator(clk, func(o *correlate.Options[event, key]) { o.MaxMembers = 2 })
	bare := event{Source: "kubelet", Object: "pod/web-0", Reason: "Failed"}
	group, _ := byReason(bare)
	if eventKey(bare) != group {
		t.Fatalf("test bug: eventKey(%v) = %v, want it equal to the group key %v", bare, eventKey(bare), group)
	}
	withMessage := bare
	withMessage.Message = "m"
	steps := []struct {
		e       event
		advance time.Duration
		want    outcome
	}{
		{bare, 0, outcome{Count: 1}},
		{withMessage, 0, outcome{Count: 1, Combined: true, Message: correlate.CombinedPrefix + "m"}}, // not 2: the group key is apart
		{bare, 0, outcome{Count: 2, Combined: true, Message: correlate.CombinedPrefix}},
		{bare, 601 * time.Second, outcome{Count: 2}}, // the group starts afresh; bare counts on its own key
	}
	for i, s := range steps {
		clk.Advance(s.advance)
		if got := outcomeOf(mustCorrelate(t, c, s.e)); got != s.want {
			t.Errorf("step %d: Correlate(%+v) = %+v, want %+v", i, s.e, got, s.want)
		}
	}
}

func TestEvictionForgetsCountAndBucket(t *testing.T) {
	c := newCorrelator(newClock(), func(o *correlate.Options[event, key]) { o.CacheSize = 2; o.Burst = 1 })
	a := event{Source: "s", Object: "a", Reason: "R", Message: "m"}
	b := event{Source: "s", Object: "b", Reason: "R", Message: "m"}
	d := event{Source: "s", Object: "d", Reason: "R", Message: "m"}
	steps := []struct {
		e    event
		want outcome
	}{
		{a, outcome{Count: 1, Message: "m"}},
		{a, outcome{Count: 2, Skip: true, Message: "m"}}, // burst 1
		{b, outcome{Count: 1, Message: "m"}},
		{d, outcome{Count: 1, Message: "m"}}, // a is the least recently used: forgotten
		{a, outcome{Count: 1, Message: "m"}}, // new again, with a full bucket
	}
	for i, s := range steps {
		if got := outcomeOf(mustCorrelate(t, c, s.e)); got != s.want {
			t.Errorf("step %d: Correlate(%v) = %+v, want %+v", i, s.e.Object, got, s.want)
		}
	}
	if got, want := c.Stats().Evicted, uint64(2); got != want { // a, then b
		t.Errorf("Stats().Evicted = %d, want %d", got, want)
	}
}

// TestEvictedGroupStartsAfresh: a group forgotten from the cache loses its
// members.
func TestEvictedGroupStartsAfresh(t *testing.T) {
	tests := []struct {
		cacheSize int
		combined  bool
	}{{3, true}, {2, false}}
	for _, tc := range tests {
		t.Run(fmt.Sprint("CacheSize=", tc.cacheSize), func(t *testing.T) {
			c := newCorrelator(newClock(), func(o *correlate.Options[event, key]) { o.CacheSize, o.MaxMembers, o.Spam = tc.cacheSize, 2, nil })
			es := similar(2, base)
			mustCorrelate(t, c, es[0])
			for _, reason := range []string{"Other", "Another"} { // two more groups
				e := base
				e.Reason = reason
				mustCorrelate(t, c, e)
			}
			if got := mustCorrelate(t, c, es[1]).Combined; got != tc.combined {
				t.Errorf("second member after two other groups: Combined = %v, want %v", got, tc.combined)
			}
		})
	}
}

func TestDefaultCacheSize(t *testing.T) {
	c := newCorrelator(newClock(), func(o *correlate.Options[event, key]) { o.Group, o.Spam = nil, nil })
	for i := range correlate.DefaultCacheSize + 1 {
		e := base
		e.Object = fmt.Sprint("pod-", i)
		mustCorrelate(t, c, e)
	}
	if got := c.Stats().Evicted; got != 1 {
		t.Errorf("%d keys: Stats().Evicted = %d, want 1", correlate.DefaultCacheSize+1, got)
	}
}

func TestStored(t *testing.T) {
	stored := base
	stored.Message = "as the sink stored it"
	first := t0.Add(-time.Hour)
	tests := []struct {
		name   string
		before []event // correlated before Stored
		obs    correlate.Observation[event]
		want   correlate.Result[event, key]
	}{
		{
			name:   "replaces a remembered key",
			before: []event{base, base},
			obs:    correlate.Observation[event]{Count: 7, First: first, Last: stored},
			want: correlate.Result[event, key]{Event: base, Key: eventKey(base), Count: 8, First: first,
				Previous: correlate.Observation[event]{Count: 7, First: first, Last: stored}},
		},
		{
			name: "adds an unknown key",
			obs:  correlate.Observation[event]{Count: 3, First: first, Last: stored},
			want: correlate.Result[event, key]{Event: base, Key: eventKey(base), Count: 4, First: first,
				Previous: correlate.Observation[event]{Count: 3, First: first, Last: stored}},
		},
		{
			name:   "a zero count makes the next occurrence new",
			before: []event{base},
			obs:    correlate.Observation[event]{Last: stored},
			want:   correlate.Result[event, key]{Event: base, Key: eventKey(base), Count: 1, First: t0},
		},
		{
			name:   "a negative count makes the next occurrence new",
			before: []event{base},
			obs:    correlate.Observation[event]{Count: -3, Last: stored},
			want:   correlate.Result[event, key]{Event: base, Key: eventKey(base), Count: 1, First: t0},
		},
		{
			name: "the largest count stays, never wrapping to a negative one",
			obs:  correlate.Observation[event]{Count: math.MaxInt, First: first, Last: stored},
			want: correlate.Result[event, key]{Event: base, Key: eventKey(base), Count: math.MaxInt, First: first,
				Previous: correlate.Observation[event]{Count: math.MaxInt, First: first, Last: stored}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCorrelator(newClock(), nil)
			for _, e := range tc.before {
				mustCorrelate(t, c, e)
			}
			c.Stored(eventKey(base), tc.obs)
			if diff := cmp.Diff(tc.want, mustCorrelate(t, c, base)); diff != "" {
				t.Errorf("Correlate after Stored(%+v) mismatch (-want +got):\n%s", tc.obs, diff)
			}
		})
	}
}

// TestRepeatAllocations pins what Correlate's doc says, with client-go's
// configuration: a repeat allocates nothing, its spam key's token bucket
// included (it lives in the key's cache entry).
func TestRepeatAllocations(t *testing.T) {
	const n = 500
	evs := objects(n) // one spam key each
	c := newCorrelator(newClock(), nil)
	for _, e := range evs {
		mustCorrelate(t, c, e)
	}
	for i, want := range []float64{0, 0, 0} { // the second, third and fourth value of each key
		j := 0
		// AllocsPerRun calls once more than it counts: n calls, one per key.
		got := testing.AllocsPerRun(n-1, func() {
			if r, err := c.Correlate(evs[j]); err != nil || r.Count != i+2 {
				t.Fatalf("Correlate(%v) = count %d, error %v; want count %d", evs[j], r.Count, err, i+2)
			}
			j++
		})
		if got != want {
			t.Errorf("repeat %d of a key: %v allocations, want %v", i+1, got, want)
		}
	}

	// A repeat whose spam key had its second value before (another event
	// of the same object) allocates nothing.
	c = newCorrelator(newClock(), nil)
	other := make([]event, n)
	for j, e := range evs {
		other[j] = e
		other[j].Reason = "Other"
		mustCorrelate(t, c, e)
		mustCorrelate(t, c, other[j]) // the spam key's second value
	}
	j := 0
	if got := testing.AllocsPerRun(n-1, func() { mustCorrelate(t, c, evs[j]); j++ }); got != 0 {
		t.Errorf("first repeat of a key whose spam key has its bucket: %v allocations, want 0", got)
	}
}

// TestStoredUnhashableKey: a key of interface type holding a slice cannot
// be hashed. Correlate refuses it with ErrPanic; Stored, given it, does not
// panic, changes nothing and counts the call in Stats.StoredPanics.
func TestStoredUnhashableKey(t *testing.T) {
	c := correlate.New(func(v any) any { return v }, correlate.Options[any, any]{Clock: newClock()})
	if _, err := c.Correlate([]int{1}); !errors.Is(err, correlate.ErrPanic) {
		t.Errorf("Correlate([]int{1}) error = %v, want ErrPanic", err)
	}
	p := func() (p any) {
		defer func() { p = recover() }()
		c.Stored([]int{1}, correlate.Observation[any]{Count: 1})
		return nil
	}()
	if p != nil {
		t.Fatalf("Stored([]int{1}, ...) panicked: %v", p)
	}
	c.Stored(1, correlate.Observation[any]{Count: 4, First: t0, Last: 1})
	r, err := c.Correlate(1)
	if err != nil || r.Count != 5 {
		t.Errorf("Correlate(1) after Stored(1, Count 4) = count %d, error %v; want count 5", r.Count, err)
	}
	want := correlate.Stats{Correlated: 1, Repeats: 1, Panics: 1, StoredPanics: 1}
	if got := c.Stats(); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}

// TestConcurrentCorrelate runs 8 goroutines on 10 keys: the counts are
// exact. Run it with -race.
func TestConcurrentCorrelate(t *testing.T) {
	c := newCorrelator(newClock(), func(o *correlate.Options[event, key]) { o.Rate = rate.Inf })
	const goroutines, each, keys = 8, 500, 10
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for i := range each {
				e := base
				e.Object = fmt.Sprint("pod-", i%keys)
				if _, err := c.Correlate(e); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for i := range keys {
		e := base
		e.Object = fmt.Sprint("pod-", i)
		if got, want := mustCorrelate(t, c, e).Count, goroutines*each/keys+1; got != want {
			t.Errorf("pod-%d: Count = %d, want %d", i, got, want)
		}
	}
	want := correlate.Stats{Correlated: goroutines*each + keys, New: keys, Repeats: goroutines * each}
	if got := c.Stats(); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}

func TestNewPanicsOnProgrammerErrors(t *testing.T) {
	tests := []struct {
		name string
		key  func(event) key
		opts correlate.Options[event, key]
		want string
	}{
		{"nil key", nil, correlate.Options[event, key]{}, "correlate: nil key function"},
		{"negative CacheSize", eventKey, correlate.Options[event, key]{CacheSize: -1}, "correlate: negative Options.CacheSize"},
		{"negative MaxMembers", eventKey, correlate.Options[event, key]{MaxMembers: -1}, "correlate: negative Options.MaxMembers"},
		{"negative Window", eventKey, correlate.Options[event, key]{Window: -1}, "correlate: negative Options.Window"},
		{"negative Burst", eventKey, correlate.Options[event, key]{Burst: -1}, "correlate: negative Options.Burst"},
		{"negative Rate", eventKey, correlate.Options[event, key]{Rate: -1}, "correlate: negative Options.Rate"},
		// x/time/rate would take a NaN rate as no limit: the spam filter
		// would never skip.
		{"NaN Rate", eventKey, correlate.Options[event, key]{Spam: perObject, Rate: rate.Limit(math.NaN())}, "correlate: NaN Options.Rate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := func() (p any) {
				defer func() { p = recover() }()
				correlate.New(tc.key, tc.opts)
				return nil
			}()
			if got != tc.want {
				t.Errorf("New panicked with %v, want %q", got, tc.want)
			}
		})
	}
}

// TestKeyNotEqualToItself pins what the package documents of a NaN key:
// never found again, so never a repeat, and a spam key that is never
// skipped.
func TestKeyNotEqualToItself(t *testing.T) {
	tests := []struct {
		name                 string
		v                    float64
		wantNew, wantSkipped uint64
	}{
		{"NaN", math.NaN(), 3, 0},
		{"a number", 1, 1, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := correlate.New(func(f float64) float64 { return f }, correlate.Options[float64, float64]{
				Spam:  func(f float64) float64 { return f },
				Burst: 1,
				Clock: newClock(),
			})
			for range 3 {
				if _, err := c.Correlate(tc.v); err != nil {
					t.Fatal(err)
				}
			}
			s := c.Stats()
			if s.New != tc.wantNew || s.Skipped != tc.wantSkipped {
				t.Errorf("3 calls of Correlate(%v): New = %d, Skipped = %d; want %d, %d", tc.v, s.New, s.Skipped, tc.wantNew, tc.wantSkipped)
			}
		})
	}
}

// TestMemberNotEqualToItself pins what the package documents of a NaN
// member key: a new member every time, so one value repeated fills its
// group.
func TestMemberNotEqualToItself(t *testing.T) {
	tests := []struct {
		name         string
		member       float64
		wantCombined uint64
	}{
		{"NaN", math.NaN(), 2}, // the third and fourth values
		{"a number", 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := correlate.New(func(f float64) float64 { return f }, correlate.Options[float64, float64]{
				Group:      func(float64) (group, member float64) { return 0, tc.member },
				MaxMembers: 3,
				Clock:      newClock(),
			})
			for range 4 {
				if _, err := c.Correlate(1); err != nil {
					t.Fatal(err)
				}
			}
			if got := c.Stats().Combined; got != tc.wantCombined {
				t.Errorf("4 values of member %v: Combined = %d, want %d", tc.member, got, tc.wantCombined)
			}
		})
	}
}
