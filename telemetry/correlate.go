package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldgo/herald/correlate"
)

// Correlator registers c's Stats with m, under herald.correlator.name name:
// its results by key (new, repeat), those combined and skipped, the calls
// that panicked and the keys evicted (see the package doc for the list).
func Correlator[T any, K comparable](m metric.Meter, name string, c *correlate.Correlator[T, K]) (metric.Registration, error) {
	type snap = correlate.Stats
	s := set{attribute.String("herald.correlator.name", name)}
	r := newRegistry[snap](m)
	const results = "Correlate calls that returned a result, by herald.correlate.key: new (not remembered before) or repeat."
	for _, c := range []count[snap]{
		{"new", func(x *snap) uint64 { return x.New }},
		{"repeat", func(x *snap) uint64 { return x.Repeats }},
	} {
		r.counter("herald.correlate.results", "{result}", results,
			s.with(attribute.String("herald.correlate.key", c.attr)), c.read)
	}
	r.counter("herald.correlate.combined", "{result}", "Results that are a group's combined stand-in.", s.with(),
		func(x *snap) uint64 { return x.Combined })
	r.counter("herald.correlate.skipped", "{result}", "Results the spam filter refused.", s.with(),
		func(x *snap) uint64 { return x.Skipped })
	const panics = "Calls ended by a panicking function, by herald.correlate.operation: correlate (a key or combine function), stored (a key that panicked when hashed)."
	for _, c := range []count[snap]{
		{"correlate", func(x *snap) uint64 { return x.Panics }},
		{"stored", func(x *snap) uint64 { return x.StoredPanics }},
	} {
		r.counter("herald.correlate.panics", "{call}", panics,
			s.with(attribute.String("herald.correlate.operation", c.attr), attribute.String(keyError, "panic")), c.read)
	}
	r.counter("herald.correlate.evicted", "{key}", "Observations forgotten to keep the cache at its size.", s.with(),
		func(x *snap) uint64 { return x.Evicted })
	return r.register(c.Stats)
}
