// Package k8stelemetry registers the Kubernetes event broadcasters of
// k8sadapter (core/v1) and k8sadapter/events (events.k8s.io/v1) with an
// OpenTelemetry metric.Meter, as package telemetry registers the core's
// components (telemetry's package doc lists the instruments). It is a
// package of its own so that a program that registers only a broadcaster
// or a correlator compiles nothing of Kubernetes.
package k8stelemetry

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldgo/herald/telemetry/internal/instrument"

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
// drops and failures by reason, and the retries (see
// telemetry's package doc for the list). One meter takes one broadcaster
// of each API: a second registration is refused until the first is
// unregistered (two would report under the same attributes; give each
// its own meter, provider.Meter(name), to register two).
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
// counts written by the periodic, eviction and final passes. As with
// EventBroadcaster, one meter takes one.
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
	s := instrument.Set{attribute.String("herald.events.api", api)}
	r := instrument.NewRegistry[snap](m)
	r.Counter("herald.events.recorded", "{event}", "Events handed to the recorders.", s.With(),
		func(x *snap) uint64 { return x.recorded })
	const outcomes = "Recorded events by outcome: created, patched, spam_skipped (core/v1) or series_observed (events.k8s.io/v1). With herald.events.dropped and herald.events.failed it sums to herald.events.recorded once the queues are empty."
	for _, c := range []instrument.Count[snap]{
		{Attr: "created", Read: func(x *snap) uint64 { return x.created }},
		{Attr: "patched", Read: func(x *snap) uint64 { return x.patched }},
		{Attr: third, Read: func(x *snap) uint64 { return x.third }},
	} {
		r.Counter("herald.events.outcomes", "{event}", outcomes, s.With(attribute.String("herald.events.outcome", c.Attr)), c.Read)
	}
	const dropped = "Recorded events never written, by reason: invalid_object, invalid_type, closed, sink_queue_full, shutdown_timeout."
	for _, c := range []instrument.Count[snap]{
		{Attr: "invalid_object", Read: func(x *snap) uint64 { return x.invalidObject }},
		{Attr: "invalid_type", Read: func(x *snap) uint64 { return x.invalidType }},
		{Attr: "closed", Read: func(x *snap) uint64 { return x.closed }},
		{Attr: "sink_queue_full", Read: func(x *snap) uint64 { return x.sinkQueue }},
		{Attr: "shutdown_timeout", Read: func(x *snap) uint64 { return x.abandoned }},
	} {
		r.Counter("herald.events.dropped", "{event}", dropped, s.Reason(c.Attr), c.Read)
	}
	const failed = "Recorded events whose write failed for good, by error.type: construction, rejected, forbidden (403: check RBAC), retries_exhausted, shutdown, panic."
	for _, c := range []instrument.Count[snap]{
		{Attr: "construction", Read: func(x *snap) uint64 { return x.construction }},
		{Attr: "rejected", Read: func(x *snap) uint64 { return x.rejected }},
		{Attr: "forbidden", Read: func(x *snap) uint64 { return x.forbidden }},
		{Attr: "retries_exhausted", Read: func(x *snap) uint64 { return x.retriesExhausted }},
		{Attr: "shutdown", Read: func(x *snap) uint64 { return x.shutdown }},
		{Attr: "panic", Read: func(x *snap) uint64 { return x.panics }},
	} {
		r.Counter("herald.events.failed", "{event}", failed, s.Failure(c.Attr), c.Read)
	}
	r.Counter("herald.events.retries", "{attempt}", "Write attempts after the first.", s.With(),
		func(x *snap) uint64 { return x.retries })
	r.Counter("herald.events.handler.dropped", "{event}",
		"Events a StartEventWatcher or StartLogging handler missed because it fell behind; they were still written.",
		s.With(), func(x *snap) uint64 { return x.handlerDropped })
	if series {
		const writes = "Series counts written by the periodic, eviction and final passes; error.type failed for those that failed."
		r.Counter("herald.events.series.writes", "{write}", writes, s.With(), func(x *snap) uint64 { return x.seriesWrites })
		r.Counter("herald.events.series.writes", "{write}", writes, s.Failure("failed"), func(x *snap) uint64 { return x.seriesFailures })
	}
	return r.Register(fmt.Sprintf("%s event broadcaster", api), snapshot)
}
