package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldgo/herald/k8sadapter"
	"github.com/heraldgo/herald/k8sadapter/events"
)

// eventsSnapshot is one collection of either adapter's Stats, in the
// terms the two share. third is SpamSkipped (core/v1) or SeriesObserved
// (events.k8s.io/v1).
type eventsSnapshot struct {
	recorded, created, patched, third                                     uint64
	invalidObject, invalidType, closed, sinkQueue, abandoned              uint64
	construction, rejected, forbidden, retriesExhausted, shutdown, panics uint64
	retries, handlerDropped, seriesWrites, seriesFailures                 uint64
}

// EventBroadcaster registers e's Stats (k8sadapter, core/v1 events) with m,
// under herald.events.api "core/v1": the events recorded, their outcomes,
// drops and failures by reason, and the retries (see the package doc for
// the list). Register each broadcaster of a meter once: two of the same
// API would report under the same attributes.
func EventBroadcaster(m metric.Meter, e *k8sadapter.EventBroadcaster) (metric.Registration, error) {
	return registerEvents(m, "core/v1", "spam_skipped", false, func() eventsSnapshot {
		s := e.Stats()
		return eventsSnapshot{
			recorded: s.Recorded, created: s.Created, patched: s.Patched, third: s.SpamSkipped,
			invalidObject: s.InvalidObject, invalidType: s.InvalidType, closed: s.DroppedClosed,
			sinkQueue: s.DroppedSinkQueue, abandoned: s.Abandoned,
			construction: s.FailedConstruction, rejected: s.FailedRejected, forbidden: s.FailedForbidden, retriesExhausted: s.FailedRetries,
			shutdown: s.FailedShutdown, panics: s.FailedPanic,
			retries: s.Retries, handlerDropped: s.DroppedWatcherQueue,
		}
	})
}

// Events registers e's Stats (k8sadapter/events, events.k8s.io/v1 events)
// with m, under herald.events.api "events.k8s.io/v1": the instruments of
// EventBroadcaster, with series_observed for spam_skipped, and the series
// counts written by the periodic, eviction and final passes.
func Events(m metric.Meter, e *events.EventBroadcaster) (metric.Registration, error) {
	return registerEvents(m, "events.k8s.io/v1", "series_observed", true, func() eventsSnapshot {
		s := e.Stats()
		return eventsSnapshot{
			recorded: s.Recorded, created: s.Created, patched: s.Patched, third: s.SeriesObserved,
			invalidObject: s.InvalidObject, invalidType: s.InvalidType, closed: s.DroppedClosed,
			sinkQueue: s.DroppedSinkQueue, abandoned: s.Abandoned,
			construction: s.FailedConstruction, rejected: s.FailedRejected, forbidden: s.FailedForbidden, retriesExhausted: s.FailedRetries,
			shutdown: s.FailedShutdown, panics: s.FailedPanic,
			retries: s.Retries, handlerDropped: s.DroppedWatcherQueue,
			seriesWrites: s.SeriesWrites, seriesFailures: s.SeriesWriteFailures,
		}
	})
}

func registerEvents(m metric.Meter, api, third string, series bool, snapshot func() eventsSnapshot) (metric.Registration, error) {
	type snap = eventsSnapshot
	s := set{attribute.String("herald.events.api", api)}
	r := newRegistry[snap](m)
	r.counter("herald.events.recorded", "{event}", "Events handed to the recorders.", s.with(),
		func(x *snap) uint64 { return x.recorded })
	const outcomes = "Recorded events by outcome: created, patched, spam_skipped (core/v1) or series_observed (events.k8s.io/v1). With herald.events.dropped and herald.events.failed it sums to herald.events.recorded once the queues are empty."
	for _, c := range []count[snap]{
		{"created", func(x *snap) uint64 { return x.created }},
		{"patched", func(x *snap) uint64 { return x.patched }},
		{third, func(x *snap) uint64 { return x.third }},
	} {
		r.counter("herald.events.outcomes", "{event}", outcomes, s.with(attribute.String("herald.events.outcome", c.attr)), c.read)
	}
	const dropped = "Recorded events never written, by reason: invalid_object, invalid_type, closed, sink_queue_full, shutdown_timeout."
	for _, c := range []count[snap]{
		{"invalid_object", func(x *snap) uint64 { return x.invalidObject }},
		{"invalid_type", func(x *snap) uint64 { return x.invalidType }},
		{"closed", func(x *snap) uint64 { return x.closed }},
		{"sink_queue_full", func(x *snap) uint64 { return x.sinkQueue }},
		{"shutdown_timeout", func(x *snap) uint64 { return x.abandoned }},
	} {
		r.counter("herald.events.dropped", "{event}", dropped, s.reason(c.attr), c.read)
	}
	const failed = "Recorded events whose write failed for good, by error.type: construction, rejected, forbidden (403: check RBAC), retries_exhausted, shutdown, panic."
	for _, c := range []count[snap]{
		{"construction", func(x *snap) uint64 { return x.construction }},
		{"rejected", func(x *snap) uint64 { return x.rejected }},
		{"forbidden", func(x *snap) uint64 { return x.forbidden }},
		{"retries_exhausted", func(x *snap) uint64 { return x.retriesExhausted }},
		{"shutdown", func(x *snap) uint64 { return x.shutdown }},
		{"panic", func(x *snap) uint64 { return x.panics }},
	} {
		r.counter("herald.events.failed", "{event}", failed, s.failure(c.attr), c.read)
	}
	r.counter("herald.events.retries", "{attempt}", "Write attempts after the first.", s.with(),
		func(x *snap) uint64 { return x.retries })
	r.counter("herald.events.handler.dropped", "{event}",
		"Events a StartEventWatcher or StartLogging handler missed because it fell behind; they were still written.",
		s.with(), func(x *snap) uint64 { return x.handlerDropped })
	if series {
		const writes = "Series counts written by the periodic, eviction and final passes; error.type failed for those that failed."
		r.counter("herald.events.series.writes", "{write}", writes, s.with(), func(x *snap) uint64 { return x.seriesWrites })
		r.counter("herald.events.series.writes", "{write}", writes, s.failure("failed"), func(x *snap) uint64 { return x.seriesFailures })
	}
	return r.register(snapshot)
}
