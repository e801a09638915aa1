package telemetry

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldgo/herald/correlate"
	"github.com/heraldgo/herald/telemetry/internal/instrument"
)

// Correlator registers c's Stats with m, under messaging.destination.name
// name (the flow it folds, named as a broadcaster is): its results by key
// (new, repeat), those combined and skipped, the calls that panicked and
// the keys evicted (see the package doc for the list). A second
// registration of a correlator under the same name with the same meter is
// refused until the first is unregistered.
func Correlator[T any, K comparable](m metric.Meter, name string, c *correlate.Correlator[T, K]) (metric.Registration, error) {
	type snap = correlate.Stats
	s := instrument.Set{attribute.String(instrument.KeyDestination, name)}
	r := instrument.NewRegistry[snap](m)
	const results = "Correlate calls that returned a result, by herald.correlate.key: new (not remembered before) or repeat."
	r.Counters("herald.correlate.results", "{result}", results, s, "herald.correlate.key",
		instrument.Count[snap]{Attr: "new", Read: func(x *snap) uint64 { return x.New }},
		instrument.Count[snap]{Attr: "repeat", Read: func(x *snap) uint64 { return x.Repeats }},
	)
	r.Counter("herald.correlate.combined", "{result}", "Results that are a group's combined stand-in.", s.With(),
		func(x *snap) uint64 { return x.Combined })
	r.Counter("herald.correlate.skipped", "{result}", "Results the spam filter refused.", s.With(),
		func(x *snap) uint64 { return x.Skipped })
	const panics = "Calls ended by a panicking function, by herald.correlate.operation: correlate (a key or combine function), stored (a key that panicked when hashed)."
	r.Counters("herald.correlate.panics", "{call}", panics,
		append(s, attribute.String(instrument.KeyError, "panic")), "herald.correlate.operation",
		instrument.Count[snap]{Attr: "correlate", Read: func(x *snap) uint64 { return x.Panics }},
		instrument.Count[snap]{Attr: "stored", Read: func(x *snap) uint64 { return x.StoredPanics }},
	)
	r.Counter("herald.correlate.evicted", "{key}", "Observations forgotten to keep the cache at its size.", s.With(),
		func(x *snap) uint64 { return x.Evicted })
	const held = "Results the spam filter refused, by herald.correlate.report: carried (counted in a later recorded result of their key), summarized (reported in a summary)."
	r.Counters("herald.correlate.skipped.reported", "{result}", held, s, "herald.correlate.report",
		instrument.Count[snap]{Attr: "carried", Read: func(x *snap) uint64 { return x.Carried }},
		instrument.Count[snap]{Attr: "summarized", Read: func(x *snap) uint64 { return x.Summarized }},
	)
	r.Counter("herald.correlate.summaries", "{summary}", "Summaries reported: one per key and report.", s.With(),
		func(x *snap) uint64 { return x.Summaries })
	r.Gauge("herald.correlate.unreported", "{result}", "Refused results waiting to be reported: by a later result of their key, a Flush, or their key's eviction.", s.With(),
		func(x *snap) int { return int(min(x.Unreported, 1<<62)) })
	return r.Register(fmt.Sprintf("correlator %q", name), c.Stats)
}
