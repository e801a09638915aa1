package telemetry_test

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/heraldgo/herald/correlate"
	"github.com/heraldgo/herald/telemetry"
	"github.com/heraldgo/herald/telemetry/internal/metrictest"
)

// TestCorrelator reads every instrument of a correlator that has seen new
// keys, repeats, a combined group, a skip, panics and an eviction.
func TestCorrelator(t *testing.T) {
	meter, reader := metrictest.NewMeter(t)
	type ev struct{ group, member string }
	c := correlate.New(func(e ev) any {
		if e.member == "panic" {
			panic("key")
		}
		return e
	}, correlate.Options[ev, any]{
		Group:      func(e ev) (any, any) { return e.group, e.member },
		Spam:       func(e ev) any { return e.group },
		MaxMembers: 2,
		Burst:      3,
		CacheSize:  2,
	})
	reg, err := telemetry.Correlator(meter, "pods", c)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	for _, e := range []ev{{"a", "1"}, {"a", "1"}, {"a", "2"}, {"a", "3"}, {"b", "1"}, {"c", "1"}, {"a", "panic"}} {
		_, _ = c.Correlate(e)
	}
	c.Stored([]int{1}, correlate.Observation[ev]{}) // a key that panics when hashed

	got := metrictest.Collect(t, reader, attribute.String("messaging.destination.name", "pods"))
	s := c.Stats()
	const r = "{result}"
	metrictest.Check(t, got, map[string]metrictest.Point{
		"herald.correlate.results{herald.correlate.key=new}":                             metrictest.Counter(r, s.New),
		"herald.correlate.results{herald.correlate.key=repeat}":                          metrictest.Counter(r, s.Repeats),
		"herald.correlate.combined":                                                      metrictest.Counter(r, s.Combined),
		"herald.correlate.skipped":                                                       metrictest.Counter(r, s.Skipped),
		"herald.correlate.panics{error.type=panic,herald.correlate.operation=correlate}": metrictest.Counter("{call}", s.Panics),
		"herald.correlate.panics{error.type=panic,herald.correlate.operation=stored}":    metrictest.Counter("{call}", s.StoredPanics),
		"herald.correlate.evicted":                                                       metrictest.Counter("{key}", s.Evicted),
		"herald.correlate.skipped.reported{herald.correlate.report=carried}":             metrictest.Counter(r, s.Carried),
		"herald.correlate.skipped.reported{herald.correlate.report=summarized}":          metrictest.Counter(r, s.Summarized),
		"herald.correlate.summaries":                                                     metrictest.Counter("{summary}", s.Summaries),
		"herald.correlate.unreported":                                                    metrictest.Gauge(r, float64(s.Unreported)),
	})
	if s.New == 0 || s.Repeats == 0 || s.Combined == 0 || s.Skipped == 0 || s.Panics == 0 || s.StoredPanics == 0 || s.Evicted == 0 {
		t.Errorf("Stats = %+v: a counter the test means to move is zero", s)
	}
}

// clock is a correlate.Clock the test moves.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// TestCorrelatorReports reads the instruments of what the spam filter
// refused: carried by a later result, summarized, and waiting.
func TestCorrelatorReports(t *testing.T) {
	meter, reader := metrictest.NewMeter(t)
	clk := &clock{now: time.Unix(1e9, 0)}
	c := correlate.New(func(e string) string { return e }, correlate.Options[string, string]{
		Spam:  func(e string) string { return e },
		Burst: 2, Clock: clk, Report: func(correlate.Summary[string, string]) {},
	})
	reg, err := telemetry.Correlator(meter, "alerts", c)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	correlateN := func(n int) {
		for range n {
			_, _ = c.Correlate("disk full")
		}
	}
	correlateN(5)                      // 2 recorded, 3 refused
	clk.now = clk.now.Add(time.Hour)   // tokens back
	correlateN(1)                      // recorded: carries the 3
	correlateN(3)                      // 1 recorded, 2 refused
	c.Flush()                          // summarizes the 2
	clk.now = clk.now.Add(time.Second) // no token back
	correlateN(1)                      // refused, waiting

	got := metrictest.Collect(t, reader, attribute.String("messaging.destination.name", "alerts"))
	s := c.Stats()
	const r = "{result}"
	metrictest.Check(t, got, map[string]metrictest.Point{
		"herald.correlate.results{herald.correlate.key=new}":                             metrictest.Counter(r, s.New),
		"herald.correlate.results{herald.correlate.key=repeat}":                          metrictest.Counter(r, s.Repeats),
		"herald.correlate.combined":                                                      metrictest.Counter(r, s.Combined),
		"herald.correlate.skipped":                                                       metrictest.Counter(r, s.Skipped),
		"herald.correlate.panics{error.type=panic,herald.correlate.operation=correlate}": metrictest.Counter("{call}", s.Panics),
		"herald.correlate.panics{error.type=panic,herald.correlate.operation=stored}":    metrictest.Counter("{call}", s.StoredPanics),
		"herald.correlate.evicted":                                                       metrictest.Counter("{key}", s.Evicted),
		"herald.correlate.skipped.reported{herald.correlate.report=carried}":             metrictest.Counter(r, s.Carried),
		"herald.correlate.skipped.reported{herald.correlate.report=summarized}":          metrictest.Counter(r, s.Summarized),
		"herald.correlate.summaries":                                                     metrictest.Counter("{summary}", s.Summaries),
		"herald.correlate.unreported":                                                    metrictest.Gauge(r, float64(s.Unreported)),
	})
	if s.Carried != 3 || s.Summarized != 2 || s.Summaries != 1 || s.Unreported != 1 {
		t.Errorf("Stats = %+v: want 3 carried, 2 summarized in 1 summary, 1 unreported", s)
	}
}
