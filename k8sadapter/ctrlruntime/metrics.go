package ctrlruntime

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldgo/herald/k8sadapter"
	"github.com/heraldgo/herald/k8sadapter/events"
)

// Label values of api.
const (
	apiCore   = "core/v1"
	apiEvents = "events.k8s.io/v1"
)

// collector exports a Provider's Stats as Prometheus counters, read from
// Stats at each scrape. The names and labels are listed in the package
// documentation.
type collector struct {
	p                                        *Provider
	recorded, fate, dropped, failed, retries *prometheus.Desc
	seriesWrites, logDropped, evicted        *prometheus.Desc
	permissionMissing, permissionErrors      *prometheus.Desc
}

func newCollector(p *Provider) *collector {
	return &collector{
		p: p,
		recorded: prometheus.NewDesc("herald_events_recorded_total",
			"Events handed to herald's recorders.", []string{"api"}, nil),
		fate: prometheus.NewDesc("herald_events_total",
			"Recorded events by fate: created, patched, spam_skipped, series_observed, dropped, failed. "+
				"Summed over fate, it equals herald_events_recorded_total once the queues are empty.",
			[]string{"api", "fate"}, nil),
		dropped: prometheus.NewDesc("herald_events_dropped_total",
			"Recorded events never written, by reason: invalid_object, invalid_type, closed, "+
				"sink_queue_full, shutdown_timeout.", []string{"api", "reason"}, nil),
		failed: prometheus.NewDesc("herald_events_failed_total",
			"Recorded events whose write failed for good, by reason: construction, rejected, forbidden, "+
				"retries_exhausted, shutdown, panic.", []string{"api", "reason"}, nil),
		retries: prometheus.NewDesc("herald_events_retries_total",
			"Event write attempts after the first.", []string{"api"}, nil),
		seriesWrites: prometheus.NewDesc("herald_events_series_writes_total",
			"Series counts written by the periodic, eviction and final passes, by result: ok, failed.",
			[]string{"api", "result"}, nil),
		logDropped: prometheus.NewDesc("herald_events_log_dropped_total",
			"Events the event log missed because it fell behind; they were still written.", []string{"api"}, nil),
		evicted: prometheus.NewDesc("herald_events_evicted_total",
			"Events the series cache forgot because it was full: a later repeat is created anew (see WithCacheSize).",
			[]string{"api"}, nil),
		permissionMissing: prometheus.NewDesc("herald_events_permission_missing",
			"1 if the identity events are written with lacks the RBAC permission (verb on events in the API "+
				"group of api) in a namespace checked when the manager started, 0 if it has it.",
			[]string{"api", "verb"}, nil),
		permissionErrors: prometheus.NewDesc("herald_events_permission_check_errors_total",
			"Permission checks cut short by an error of the apiserver's access review (or the check's timeout).",
			nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.recorded, c.fate, c.dropped, c.failed, c.retries, c.seriesWrites,
		c.logDropped, c.evicted, c.permissionMissing, c.permissionErrors} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.p.Stats()
	emit := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for _, a := range []struct {
		api string
		f   fates
	}{{apiCore, coreFates(s.Core)}, {apiEvents, eventsFates(s.Events)}} {
		f := a.f
		emit(c.recorded, f.recorded, a.api)
		var dropped, failed uint64
		for _, r := range f.dropped {
			emit(c.dropped, r.n, a.api, r.name)
			dropped += r.n
		}
		for _, r := range f.failed {
			emit(c.failed, r.n, a.api, r.name)
			failed += r.n
		}
		for _, r := range f.written {
			emit(c.fate, r.n, a.api, r.name)
		}
		emit(c.fate, dropped, a.api, "dropped")
		emit(c.fate, failed, a.api, "failed")
		emit(c.retries, f.retries, a.api)
		emit(c.logDropped, f.logDropped, a.api)
	}
	emit(c.seriesWrites, s.Events.SeriesWrites, apiEvents, "ok")
	emit(c.seriesWrites, s.Events.SeriesWriteFailures, apiEvents, "failed")
	emit(c.evicted, s.Events.Evicted, apiEvents)
	c.collectPermissions(ch)
}

// collectPermissions exports what the permission check found: a gauge
// for each permission it could check, and the count of checks that
// failed.
func (c *collector) collectPermissions(ch chan<- prometheus.Metric) {
	missing, errs := c.p.perms.snapshot()
	for _, perm := range needed {
		m, ok := missing[perm]
		if !ok {
			continue
		}
		v := 0.0
		if m {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.permissionMissing, prometheus.GaugeValue, v, perm.api, perm.verb)
	}
	ch <- prometheus.MustNewConstMetric(c.permissionErrors, prometheus.CounterValue, float64(errs))
}

// count is one labelled counter.
type count struct {
	name string
	n    uint64
}

// fates is one API's Stats in the metrics' terms: every recorded event is
// in exactly one of written, dropped and failed (or still queued).
type fates struct {
	recorded            uint64
	written             []count // fates other than dropped and failed
	dropped, failed     []count // by reason
	retries, logDropped uint64
}

// commonFates builds the fates both APIs count alike; written holds the
// written fates, which differ.
func commonFates(recorded uint64, written []count,
	invalidObject, invalidType, closed, sinkQueue, abandoned,
	construction, rejected, forbidden, retriesExhausted, shutdown, panics,
	retries, logDropped uint64) fates {
	return fates{
		recorded: recorded,
		written:  written,
		dropped: []count{{"invalid_object", invalidObject}, {"invalid_type", invalidType},
			{"closed", closed}, {"sink_queue_full", sinkQueue}, {"shutdown_timeout", abandoned}},
		failed: []count{{"construction", construction}, {"rejected", rejected}, {"forbidden", forbidden},
			{"retries_exhausted", retriesExhausted}, {"shutdown", shutdown}, {"panic", panics}},
		retries:    retries,
		logDropped: logDropped,
	}
}

func coreFates(s k8sadapter.Stats) fates {
	return commonFates(s.Recorded,
		[]count{{"created", s.Created}, {"patched", s.Patched}, {"spam_skipped", s.SpamSkipped}},
		s.InvalidObject, s.InvalidType, s.DroppedClosed, s.DroppedSinkQueue, s.Abandoned,
		s.FailedConstruction, s.FailedRejected, s.FailedForbidden, s.FailedRetries, s.FailedShutdown, s.FailedPanic,
		s.Retries, s.DroppedWatcherQueue)
}

func eventsFates(s events.Stats) fates {
	return commonFates(s.Recorded,
		[]count{{"created", s.Created}, {"patched", s.Patched}, {"series_observed", s.SeriesObserved}},
		s.InvalidObject, s.InvalidType, s.DroppedClosed, s.DroppedSinkQueue, s.Abandoned,
		s.FailedConstruction, s.FailedRejected, s.FailedForbidden, s.FailedRetries, s.FailedShutdown, s.FailedPanic,
		s.Retries, s.DroppedWatcherQueue)
}
