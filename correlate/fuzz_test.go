package correlate_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/heraldgo/herald/correlate"
)

// FuzzCorrelate drives a small correlator with an arbitrary sequence of
// events and clock steps. Whatever the sequence: no panic, every result is
// consistent with what was remembered, the counters add up, and a second
// correlator fed the same sequence decides the same.
func FuzzCorrelate(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add([]byte{255, 0, 255, 0, 128, 64, 32})
	f.Fuzz(func(t *testing.T, script []byte) {
		run := func() []correlate.Result[event, key] {
			clk := newClock()
			c := newCorrelator(clk, func(o *correlate.Options[event, key]) {
				o.CacheSize, o.MaxMembers, o.Burst, o.Window = 4, 3, 2, time.Minute
			})
			var out []correlate.Result[event, key]
			for _, b := range script {
				// Low bits pick the event, high bits the clock step.
				e := event{
					Source:  fmt.Sprint(b & 1),
					Object:  fmt.Sprint(b >> 1 & 3),
					Reason:  fmt.Sprint(b >> 3 & 1),
					Message: fmt.Sprint(b >> 4 & 3),
				}
				clk.Step(time.Duration(b>>6) * 40 * time.Second)
				r, err := c.Correlate(e)
				if err != nil {
					t.Fatalf("Correlate(%v) error = %v", e, err)
				}
				if r.Count < 1 {
					t.Fatalf("count %d < 1", r.Count)
				}
				if r.Previous.Count > 0 && r.Count != r.Previous.Count+1 {
					t.Fatalf("count %d after %d", r.Count, r.Previous.Count)
				}
				if r.Previous.Count == 0 && r.Count != 1 {
					t.Fatalf("new key with count %d", r.Count)
				}
				out = append(out, r)
			}
			s := c.Stats()
			if s.Correlated != uint64(len(script)) || s.New+s.Repeats != s.Correlated || s.Skipped > s.Correlated || s.Combined > s.Correlated {
				t.Fatalf("Stats() = %+v for %d events", s, len(script))
			}
			return out
		}
		a, b := run(), run()
		for i := range a {
			if a[i].Key != b[i].Key || a[i].Count != b[i].Count || a[i].Skip != b[i].Skip || a[i].Combined != b[i].Combined {
				t.Fatalf("event %d decided differently on a second run: %+v vs %+v", i, a[i], b[i])
			}
		}
	})
}

// FuzzAlertKeyBoundary moves the boundary between two fields of the key
// used in the package example: struct keys must tell the two apart, where
// concatenated strings would not.
func FuzzAlertKeyBoundary(f *testing.F) {
	f.Add("api", "latency", uint8(2))
	f.Add("", "x", uint8(0))
	f.Fuzz(func(t *testing.T, service, check string, shift uint8) {
		k := int(shift) % (len(service) + 1)
		a := Alert{Service: service, Check: check}
		b := Alert{Service: service[:len(service)-k], Check: service[len(service)-k:] + check}
		group := func(x Alert) Alert { return Alert{Service: x.Service, Check: x.Check, Severity: x.Severity} }
		if k > 0 && group(a) == group(b) {
			t.Fatalf("group keys collide: %q|%q vs %q|%q", a.Service, a.Check, b.Service, b.Check)
		}
		if k > 0 && a.Service+a.Check != b.Service+b.Check {
			t.Fatalf("test bug: the concatenations should be equal")
		}
	})
}
