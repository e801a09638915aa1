package correlate_test

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/heraldgo/herald/correlate"
)

// summaries returns a correlator of client-go's configuration, with a
// spam burst of 2 and a cache of size entries, whose Report appends to
// the slice returned.
func summaries(clk correlate.Clock, size int) (*correlate.Correlator[event, key], *[]correlate.Summary[event, key]) {
	var got []correlate.Summary[event, key]
	c := newCorrelator(clk, func(o *correlate.Options[event, key]) {
		o.Burst, o.CacheSize = 2, size
		o.Report = func(s correlate.Summary[event, key]) { got = append(got, s) }
	})
	return c, &got
}

// TestFlushReportsTheTailOfAFlood: a flood of 10 repeats a second apart
// passes 2 and skips 8; once it stops no repeat will carry them, and
// Flush reports them in one summary: the key, the 8, the key's count, the
// first and last time, the last value. A second Flush has nothing to say.
func TestFlushReportsTheTailOfAFlood(t *testing.T) {
	clk := newClock()
	c, got := summaries(clk, 16)
	for range 10 {
		clk.Advance(time.Second)
		mustCorrelate(t, c, base)
	}
	if len(*got) != 0 {
		t.Fatalf("summaries before Flush: %+v", *got)
	}
	c.Flush()
	want := []correlate.Summary[event, key]{{
		Key: eventKey(base), Count: 8, Total: 10,
		First: t0.Add(3 * time.Second), Last: t0.Add(10 * time.Second), Event: base,
	}}
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("summaries after Flush (-want +got):\n%s", diff)
	}
	wantStats := correlate.Stats{Correlated: 10, New: 1, Repeats: 9, Skipped: 8, Summarized: 8, Summaries: 1}
	if diff := cmp.Diff(wantStats, c.Stats()); diff != "" {
		t.Errorf("Stats() after Flush (-want +got):\n%s", diff)
	}
	c.Flush()
	if len(*got) != 1 {
		t.Errorf("a second Flush reported %+v, want nothing more", (*got)[1:])
	}
}

// TestRecordedRepeatCarriesTheSkipped: a repeat recorded after a refill
// carries the values skipped before it in its count: they are Carried,
// and no summary reports them again; the values skipped after it are
// reported, counted from it.
func TestRecordedRepeatCarriesTheSkipped(t *testing.T) {
	clk := newClock()
	c, got := summaries(clk, 16)
	for range 5 { // 2 recorded, 3 skipped
		mustCorrelate(t, c, base)
	}
	clk.Advance(301 * time.Second) // a token back
	if r := mustCorrelate(t, c, base); r.Skip || r.Count != 6 {
		t.Fatalf("after a refill: %+v, want recorded with count 6", r)
	}
	mustCorrelate(t, c, base) // skipped
	c.Flush()
	want := []correlate.Summary[event, key]{{
		Key: eventKey(base), Count: 1, Total: 7, First: clk.Now(), Last: clk.Now(), Event: base,
	}}
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("summaries (-want +got):\n%s", diff)
	}
	if s := c.Stats(); s.Carried != 3 || s.Summarized != 1 || s.Unreported != 0 {
		t.Errorf("Stats() = %+v, want 3 carried, 1 summarized, none unreported", s)
	}
}

// TestEvictionReportsTheSkipped: a key forgotten to make room in the
// cache reports its skipped values at once, from the Correlate call that
// made room, before it returns; the summary says it was evicted.
func TestEvictionReportsTheSkipped(t *testing.T) {
	clk := newClock()
	c, got := summaries(clk, 1)
	for range 4 { // 2 recorded, 2 skipped
		mustCorrelate(t, c, base)
	}
	other := base
	other.Object = "other"
	mustCorrelate(t, c, other) // takes the one entry
	want := []correlate.Summary[event, key]{{
		Key: eventKey(base), Count: 2, Total: 4, First: t0, Last: t0, Event: base, Evicted: true,
	}}
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("summaries after the eviction (-want +got):\n%s", diff)
	}
	if s := c.Stats(); s.Summarized != 2 || s.Unreported != 0 || s.Evicted < 1 {
		t.Errorf("Stats() = %+v, want the 2 summarized, none unreported, an eviction", s)
	}
}

// TestReportMayCallTheCorrelator: Report runs outside the Correlator's
// lock: it may read Stats, Peek or even Correlate.
func TestReportMayCallTheCorrelator(t *testing.T) {
	var c *correlate.Correlator[event, key]
	var seen correlate.Stats
	c = newCorrelator(newClock(), func(o *correlate.Options[event, key]) {
		o.Burst = 1
		o.Report = func(correlate.Summary[event, key]) {
			seen = c.Stats()
			c.Peek(eventKey(base))
		}
	})
	mustCorrelate(t, c, base)
	mustCorrelate(t, c, base) // skipped
	c.Flush()
	if seen.Summaries != 1 {
		t.Errorf("Stats() from Report = %+v, want the summary counted", seen)
	}
}

// TestPeek: Peek reads a key's count and its unreported values without
// counting, and finds a group's stand-ins under the group key.
func TestPeek(t *testing.T) {
	clk := newClock()
	c, _ := summaries(clk, 16)
	if _, _, ok := c.Peek(eventKey(base)); ok {
		t.Error("Peek of a key never seen reported it")
	}
	for range 3 {
		mustCorrelate(t, c, base)
	}
	for range 2 {
		if o, n, ok := c.Peek(eventKey(base)); !ok || o.Count != 3 || n != 1 || !o.First.Equal(t0) {
			t.Errorf("Peek = %+v, %d, %v; want count 3, 1 unreported, first t0", o, n, ok)
		}
	}
	var r correlate.Result[event, key]
	for _, e := range similar(10, base) {
		r = mustCorrelate(t, c, e)
	}
	if !r.Combined {
		t.Fatalf("the tenth similar event was not combined: %+v", r)
	}
	if o, _, ok := c.Peek(r.Key); !ok || o.Count != r.Count {
		t.Errorf("Peek(group key) = %+v, %v; want count %d", o, ok, r.Count)
	}
}

// TestCountsAddUpUnderConcurrency: goroutines correlate a flood over more
// keys than the cache holds while another flushes and snapshots Stats:
// every snapshot adds up (every value recorded, carried, summarized or
// unreported), and at the end the summaries reported exactly the values
// Stats says they did, and nothing is left unreported.
func TestCountsAddUpUnderConcurrency(t *testing.T) {
	var mu sync.Mutex
	var reported uint64
	c := newCorrelator(&tickClock{}, func(o *correlate.Options[event, key]) {
		o.Burst, o.CacheSize, o.Rate = 3, 16, 10 // a token every 100 readings
		o.Report = func(s correlate.Summary[event, key]) {
			mu.Lock()
			reported += uint64(s.Count)
			mu.Unlock()
		}
	})
	check := func(s correlate.Stats) {
		t.Helper()
		if recorded := s.Correlated - s.Skipped; s.Correlated != recorded+s.Carried+s.Summarized+s.Unreported {
			t.Errorf("Stats() = %+v: %d in, %d recorded + %d carried + %d summarized + %d unreported",
				s, s.Correlated, recorded, s.Carried, s.Summarized, s.Unreported)
		}
	}
	const workers, calls = 4, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range calls {
				e := base
				e.Object = []string{"a", "b", "c", "d", "e", "f", "g", "h"}[rng.IntN(8)]
				e.Message = []string{"m0", "m1", "m2", "m3"}[rng.IntN(4)]
				mustCorrelate(t, c, e)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		c.Flush()
		check(c.Stats())
	}
	c.Flush()
	s := c.Stats()
	check(s)
	mu.Lock()
	defer mu.Unlock()
	if s.Correlated != workers*calls || s.Unreported != 0 || reported != s.Summarized || s.Skipped == 0 {
		t.Errorf("at the end: Stats() = %+v, summaries reported %d; want %d in, all skipped reported", s, reported, workers*calls)
	}
}

// tickClock is safe for concurrent use: each reading is a millisecond
// after the one before.
type tickClock struct{ n atomic.Int64 }

func (c *tickClock) Now() time.Time { return t0.Add(time.Duration(c.n.Add(1)) * time.Millisecond) }
