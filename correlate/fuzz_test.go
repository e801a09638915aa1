package correlate_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/time/rate"

	"github.com/heraldgo/herald/correlate"
)

// Settings of the fuzzed correlator: small, so that a short script fills
// groups, evicts entries and runs out of tokens.
const (
	fuzzCacheSize  = 4
	fuzzMaxMembers = 3
	fuzzBurst      = 2
	fuzzWindow     = time.Minute
	fuzzRate       = rate.Limit(1.0 / 60)
)

// FuzzCorrelate drives a small correlator with an arbitrary script of
// events, clock steps and Stored calls, on a clock that also advances 1 s
// on every reading (one per Correlate). Each byte is one operation: its low
// 6 bits pick one of 64 events, its top 2 bits either a clock step before
// Correlate (0, 28 or 58 s, so that gaps of exactly Window are common) or,
// for 3, a Stored call on that event's key. Events without a message have
// the key of their own group, to try the separation of the two.
//
// Whatever the script: no panic and no error; every count follows from
// the one before under its key (or starts at 1 after a window reset, an
// eviction or a zero Stored); the counters add up; and every Result equals
// that of a plain reference model (maps and slices, no hashing, no entry
// reuse) that spells out client-go's rules.
func FuzzCorrelate(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add([]byte{255, 0, 255, 0, 128, 64, 32})
	f.Add([]byte{0x00, 0x10, 0x20, 0x30, 0x00, 0x10, 0x20, 0x30, 0xc0, 0x00}) // one group, full, then Stored
	f.Add([]byte{1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7})                      // eight objects: evictions
	f.Add([]byte{0x00, 0x10, 0x82, 0xa0})                                     // a third member 120 s after the second: a fresh group
	f.Add([]byte{0x00, 0x10, 0xa0})                                           // a third member exactly Window after the second
	f.Add([]byte{0x00, 0xc0, 0x00})                                           // Stored with a zero count: new again
	f.Add([]byte{0x00, 0x10, 0x02, 0x04, 0x06, 0x08, 0x28})                   // a group evicted, its entry reused by another
	f.Fuzz(func(t *testing.T, script []byte) {
		clk := &intervalClock{t: t0, step: time.Second}
		var reported uint64 // the values the summaries reported
		c := newCorrelator(clk, func(o *correlate.Options[event, key]) {
			o.CacheSize, o.MaxMembers, o.Burst, o.Window, o.Rate = fuzzCacheSize, fuzzMaxMembers, fuzzBurst, fuzzWindow, fuzzRate
			o.Report = func(s correlate.Summary[event, key]) {
				if s.Count < 1 {
					t.Errorf("Summary %+v: want at least one value", s)
				}
				reported += uint64(s.Count)
			}
		})
		m := newModel()
		last := map[resultKey]int{} // count last seen under each key
		correlated := 0
		for i, b := range script {
			e := fuzzEvent(b)
			if b>>6 == 3 {
				obs := correlate.Observation[event]{Count: int(b >> 4 & 3), First: clk.t, Last: e}
				c.Stored(eventKey(e), obs)
				m.stored(eventKey(e), obs)
				last[resultKey{eventKey(e), false}] = obs.Count
				continue
			}
			step := []time.Duration{0, 28 * time.Second, 58 * time.Second}[b>>6]
			clk.t = clk.t.Add(step)
			got, err := c.Correlate(e)
			if err != nil {
				t.Fatalf("op %d: Correlate(%v) error = %v", i, e, err)
			}
			correlated++
			if want := m.correlate(e, step); !sameResult(want, got) {
				t.Fatalf("op %d: Correlate(%v) differs from the model (-want +got):\n%s", i, e, cmp.Diff(want, got))
			}

			// Model-free checks.
			rk := resultKey{got.Key, got.Combined}
			switch prev := got.Previous.Count; {
			case got.Count < 1:
				t.Fatalf("op %d: Count = %d, want at least 1", i, got.Count)
			case prev > 0 && (got.Count != prev+1 || prev != last[rk]):
				t.Fatalf("op %d: Count = %d after Previous.Count %d, last seen %d", i, got.Count, prev, last[rk])
			case prev == 0 && last[rk] > 0 && c.Stats().Evicted == 0:
				t.Fatalf("op %d: key %v forgotten at count %d with nothing evicted", i, rk, last[rk])
			}
			last[rk] = got.Count
		}
		s := c.Stats()
		if s.Correlated != uint64(correlated) || s.New+s.Repeats != s.Correlated || s.Skipped > s.Correlated || s.Combined > s.Correlated || s.Panics != 0 {
			t.Fatalf("Stats() = %+v after %d Correlate calls", s, correlated)
		}
		if diff := cmp.Diff(m.stats, s); diff != "" {
			t.Fatalf("Stats() differs from the model (-want +got):\n%s", diff)
		}
		if reported != s.Summarized {
			t.Fatalf("summaries reported %d values, Stats().Summarized = %d", reported, s.Summarized)
		}
		c.Flush() // the rest, reported as if not evicted
		s = c.Stats()
		if s.Unreported != 0 || s.Skipped != s.Carried+s.Summarized {
			t.Fatalf("Stats() after Flush = %+v: want every skipped value carried or summarized", s)
		}
	})
}

// sameResult is cmp.Equal for Results of events, without the reflection:
// the fuzz target compares every operation.
func sameResult(a, b correlate.Result[event, key]) bool {
	sameEvent := func(x, y event) bool { return eventKey(x) == eventKey(y) && x.At.Equal(y.At) }
	return sameEvent(a.Event, b.Event) && a.Key == b.Key && a.Combined == b.Combined &&
		a.Count == b.Count && a.First.Equal(b.First) && a.Skip == b.Skip &&
		a.Previous.Count == b.Previous.Count && a.Previous.First.Equal(b.Previous.First) && sameEvent(a.Previous.Last, b.Previous.Last)
}

// resultKey is a key as Result reports it: a group key or an event key.
type resultKey struct {
	k        key
	combined bool
}

// fuzzEvent maps the low 6 bits of b to one of 64 events: 2 sources × 4
// objects × 2 reasons × 4 messages (one empty); 16 groups, 8 spam keys.
func fuzzEvent(b byte) event {
	return event{
		Source:  []string{"s0", "s1"}[b&1],
		Object:  []string{"o0", "o1", "o2", "o3"}[b>>1&3],
		Reason:  []string{"r0", "r1"}[b>>3&1],
		Message: []string{"", "m1", "m2", "m3"}[b>>4&3],
	}
}

// model is the reference: client-go's rules written as plainly as
// possible, with the fuzz settings and newCorrelator's functions.
type model struct {
	now    time.Time
	groups *modelLRU[key, modelGroup]
	obs    *modelLRU[resultKey, correlate.Observation[event]]
	spam   *modelLRU[key, rate.Limiter]
	stats  correlate.Stats
	pend   map[resultKey]int // skipped values not reported yet, by key
}

type modelGroup struct {
	members []key // least recently seen first
	last    time.Time
}

func newModel() *model {
	m := &model{
		now:    t0,
		groups: &modelLRU[key, modelGroup]{vals: map[key]*modelGroup{}},
		obs:    &modelLRU[resultKey, correlate.Observation[event]]{vals: map[resultKey]*correlate.Observation[event]{}},
		spam:   &modelLRU[key, rate.Limiter]{vals: map[key]*rate.Limiter{}},
		pend:   map[resultKey]int{},
	}
	// A key forgotten with values not reported reports them in a summary.
	m.obs.evict = func(k resultKey) {
		if n := uint64(m.pend[k]); n > 0 {
			m.stats.Summarized += n
			m.stats.Summaries++
			m.stats.Unreported -= n
			delete(m.pend, k)
		}
	}
	return m
}

// correlate is Correlate after the clock moved by step; the clock also
// moves 1 s on its reading.
func (m *model) correlate(e event, step time.Duration) correlate.Result[event, key] {
	m.now = m.now.Add(step + time.Second)
	now := m.now
	res := correlate.Result[event, key]{Event: e, Key: eventKey(e)}

	g, member := byReason(e)
	rec, ok := m.groups.get(g)
	if !ok || now.Sub(rec.last) > fuzzWindow {
		rec = &modelGroup{}
		m.groups.put(g, rec)
	}
	rec.members = append(slices.DeleteFunc(rec.members, func(k key) bool { return k == member }), member)
	rec.last = now
	if len(rec.members) >= fuzzMaxMembers {
		rec.members = rec.members[1:]
		res.Event, res.Key, res.Combined = combine(e, now), g, true
		m.stats.Combined++
	}

	rk := resultKey{res.Key, res.Combined}
	if o, ok := m.obs.get(rk); ok && o.Count > 0 {
		res.Previous = *o
		o.Count++
		res.Count, res.First = o.Count, o.First
		m.stats.Repeats++
	} else {
		res.Count, res.First = 1, now
		m.obs.put(rk, &correlate.Observation[event]{Count: 1, First: now, Last: res.Event})
		m.stats.New++
	}

	sk := perObject(res.Event)
	lim, ok := m.spam.get(sk)
	if !ok {
		lim = rate.NewLimiter(fuzzRate, fuzzBurst)
		m.spam.put(sk, lim)
	}
	if !lim.AllowN(m.now, 1) {
		res.Skip = true
		m.stats.Skipped++
	}
	// What is not reported yet: a skipped value waits; a recorded repeat
	// carries what waited.
	switch {
	case res.Skip:
		m.pend[rk]++
		m.stats.Unreported++
	case res.Previous.Count > 0:
		m.stats.Carried += uint64(m.pend[rk])
		m.stats.Unreported -= uint64(m.pend[rk])
		delete(m.pend, rk)
	}
	m.stats.Correlated++
	m.stats.Evicted = m.obs.evicted
	return res
}

func (m *model) stored(k key, obs correlate.Observation[event]) {
	rk := resultKey{k, false}
	if o, ok := m.obs.get(rk); ok {
		*o = obs
		return
	}
	m.obs.put(rk, &obs)
	m.stats.Evicted = m.obs.evicted
}

// modelLRU is a least-recently-used map of fuzzCacheSize entries, as
// plain as it gets.
type modelLRU[K comparable, V any] struct {
	order   []K // least recently used first
	vals    map[K]*V
	evicted uint64
	evict   func(K) // if not nil, told of each key evicted
}

func (l *modelLRU[K, V]) get(k K) (*V, bool) {
	v, ok := l.vals[k]
	if ok {
		l.touch(k)
	}
	return v, ok
}

// put sets k to v and makes it the most recently used, evicting the least
// recently used beyond fuzzCacheSize.
func (l *modelLRU[K, V]) put(k K, v *V) {
	if _, ok := l.vals[k]; !ok && len(l.order) == fuzzCacheSize {
		if l.evict != nil {
			l.evict(l.order[0])
		}
		delete(l.vals, l.order[0])
		l.order = l.order[1:]
		l.evicted++
	}
	l.vals[k] = v
	l.touch(k)
}

func (l *modelLRU[K, V]) touch(k K) {
	l.order = append(slices.DeleteFunc(l.order, func(o K) bool { return o == k }), k)
}

// FuzzAlertKeyFieldBoundary moves bytes across one boundary between two
// fields of an Alert (Service|Check, Check|Severity or Severity|Message),
// which leaves the concatenation of the fields unchanged. The key functions
// of the package example must tell the two alerts apart wherever the moved
// field is part of the key, and a Correlator must not count one as a repeat
// of the other: comparable struct keys cannot collide the way concatenated
// strings do.
func FuzzAlertKeyFieldBoundary(f *testing.F) {
	f.Add("api", "latency", "critical", "p99 500ms", uint8(0), uint8(2))
	f.Add("db", "disk", "warning", "91% full", uint8(1), uint8(1))
	f.Add("", "x", "", "y", uint8(2), uint8(0))
	f.Add("00", "0", "0", "", uint8(0), uint8(1))
	f.Fuzz(func(t *testing.T, service, check, severity, message string, boundary, shift uint8) {
		fields := []string{service, check, severity, message}
		i := int(boundary) % 3 // the boundary between fields i and i+1
		k := int(shift) % (len(fields[i]) + 1)
		if k == 0 {
			return // nothing moved: the same alert
		}
		moved := slices.Clone(fields)
		moved[i], moved[i+1] = fields[i][:len(fields[i])-k], fields[i][len(fields[i])-k:]+fields[i+1]
		a := Alert{fields[0], fields[1], fields[2], fields[3]}
		b := Alert{moved[0], moved[1], moved[2], moved[3]}
		if strings.Join(fields, "") != strings.Join(moved, "") {
			t.Fatalf("test bug: %q and %q should concatenate alike", fields, moved)
		}

		if alertKey(a) == alertKey(b) {
			t.Errorf("alertKey collides: %+v and %+v", a, b)
		}
		ga, ma := alertGroup(a)
		gb, mb := alertGroup(b)
		if ga == gb { // the group key has the first three fields: always moved
			t.Errorf("alertGroup's group key collides: %+v and %+v", a, b)
		}
		if got, want := ma != mb, i == 2; got != want { // only Message is in the member key
			t.Errorf("alertGroup's member keys differ = %v, want %v, for %+v and %+v", got, want, a, b)
		}
		if got, want := alertSpam(a) != alertSpam(b), i == 0; got != want { // only Service is in the spam key
			t.Errorf("alertSpam's keys differ = %v, want %v, for %+v and %+v", got, want, a, b)
		}

		c := correlate.New(alertKey, correlate.Options[Alert, Alert]{CacheSize: 4, Clock: &fakeClock{now: t0}})
		if _, err := c.Correlate(a); err != nil {
			t.Fatal(err)
		}
		if r, err := c.Correlate(b); err != nil || r.Count != 1 {
			t.Errorf("Correlate(%+v) after Correlate(%+v) = count %d, %v; want a new key, count 1", b, a, r.Count, err)
		}
	})
}
