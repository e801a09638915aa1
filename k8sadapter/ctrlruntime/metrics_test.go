package ctrlruntime_test

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/heraldgo/herald/k8sadapter/ctrlruntime"
)

// gather returns every herald counter and gauge in g as
// "name{label=value,…}" → value.
func gather(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "herald_") {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			v := m.GetCounter().GetValue()
			if g := m.GetGauge(); g != nil {
				v = g.GetValue()
			}
			out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}

// nonzero returns the entries of m that are not zero.
func nonzero(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// The metrics say what became of every event, by fate, and why events
// were dropped; the fates add up to the recorded events.
func TestMetrics(t *testing.T) {
	var l logs
	mgr := newManager(t, &l)
	reg := prometheus.NewRegistry()
	client := fake.NewClientset()
	p, err := ctrlruntime.New(mgr, ctrlruntime.WithClient(client), ctrlruntime.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	core, ev := p.GetEventRecorderFor("a"), p.GetEventRecorder("a")
	for range 3 { // created once, then patched twice
		core.Event(pod(1), v1.EventTypeWarning, "BackOff", "back-off")
	}
	core.Event(pod(1), "Bogus", "BackOff", "back-off") // invalid type
	core.Event(nil, v1.EventTypeNormal, "Nothing", "no object")
	for range 3 { // created, patched as a series of 2, then counted in the series
		ev.Eventf(pod(2), nil, v1.EventTypeWarning, "BackOff", "Restart", "back-off")
	}
	// Wait until every event has met its fate (the writers are
	// asynchronous): the counters are then final.
	eventually(t, "every event handled", func() bool {
		s := p.Stats()
		return s.Core.Created+s.Core.Patched == 3 && s.Events.Created+s.Events.Patched+s.Events.SeriesObserved == 3
	})
	got := gather(t, reg)
	want := map[string]float64{
		"herald_events_recorded_total{api=core/v1}":                      5,
		"herald_events_total{api=core/v1,fate=created}":                  1,
		"herald_events_total{api=core/v1,fate=patched}":                  2,
		"herald_events_total{api=core/v1,fate=dropped}":                  2,
		"herald_events_dropped_total{api=core/v1,reason=invalid_object}": 1,
		"herald_events_dropped_total{api=core/v1,reason=invalid_type}":   1,
		"herald_events_recorded_total{api=events.k8s.io/v1}":             3,
		"herald_events_total{api=events.k8s.io/v1,fate=created}":         1,
		"herald_events_total{api=events.k8s.io/v1,fate=patched}":         1,
		"herald_events_total{api=events.k8s.io/v1,fate=series_observed}": 1,
	}
	if diff := cmp.Diff(want, nonzero(got)); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	for _, api := range []string{"core/v1", "events.k8s.io/v1"} {
		var fates float64
		for k, v := range got {
			if strings.HasPrefix(k, "herald_events_total{api="+api+",") {
				fates += v
			}
		}
		if recorded := got["herald_events_recorded_total{api="+api+"}"]; fates != recorded {
			t.Errorf("%s: herald_events_total summed over fate = %v, want herald_events_recorded_total = %v", api, fates, recorded)
		}
	}

	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := gather(t, reg); len(got) != 0 {
		t.Errorf("metrics left registered after Shutdown: %v", got)
	}
}

// By default the metrics go to controller-runtime's registry, which the
// manager serves; a second Provider cannot register them while the first
// has not shut down.
func TestMetricsInControllerRuntimeRegistry(t *testing.T) {
	var l logs
	first, err := ctrlruntime.New(newManager(t, &l), ctrlruntime.WithClient(fake.NewClientset()))
	if err != nil {
		t.Fatal(err)
	}
	if got := gather(t, metrics.Registry); got["herald_events_recorded_total{api=core/v1}"] != 0 || len(got) == 0 {
		t.Errorf("controller-runtime's registry holds %v, want herald's counters at 0", got)
	}
	_, err = ctrlruntime.New(newManager(t, &l), ctrlruntime.WithClient(fake.NewClientset()))
	if !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		t.Errorf("second New: %v, want a prometheus.AlreadyRegisteredError", err)
	}
	if err := first.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	second, err := ctrlruntime.New(newManager(t, &l), ctrlruntime.WithClient(fake.NewClientset()))
	if err != nil {
		t.Fatalf("New after the first shut down: %v", err)
	}
	if err := second.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
