// Package metrictest collects what telemetry's registrations report, for
// the tests of telemetry and its subpackages.
package metrictest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// NewMeter returns a meter whose instruments the returned manual reader
// collects.
func NewMeter(t testing.TB) (metric.Meter, *sdkmetric.ManualReader) {
	r := sdkmetric.NewManualReader()
	p := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p.Meter("herald-test"), r
}

// A Point is one collected data point: its instrument's kind, unit and
// value.
type Point struct {
	Kind  string // counter, updown, gauge
	Unit  string
	Value float64
}

// Collect reads every data point of r, keyed by instrument name and the
// attributes other than common, which every point must carry.
func Collect(t testing.TB, r *sdkmetric.ManualReader, common ...attribute.KeyValue) map[string]Point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	out := make(map[string]Point)
	add := func(name, kind, unit string, a attribute.Set, v float64) {
		k := key(t, name, a, common)
		if _, dup := out[k]; dup {
			t.Errorf("%s observed twice", k)
		}
		out[k] = Point{kind, unit, v}
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				kind := "updown"
				if d.IsMonotonic {
					kind = "counter"
				}
				for _, p := range d.DataPoints {
					add(m.Name, kind, m.Unit, p.Attributes, float64(p.Value))
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					add(m.Name, "gauge", m.Unit, p.Attributes, float64(p.Value))
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					add(m.Name, "gauge", m.Unit, p.Attributes, p.Value)
				}
			default:
				t.Errorf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

// key is name{k=v,…} over the attributes of a other than common.
func key(t testing.TB, name string, a attribute.Set, common []attribute.KeyValue) string {
	for _, kv := range common {
		if v, ok := a.Value(kv.Key); !ok || v != kv.Value {
			t.Errorf("%s %v: want %s=%s", name, a.ToSlice(), kv.Key, kv.Value.String())
		}
	}
	var rest []string
	for _, kv := range a.ToSlice() {
		if !slices.ContainsFunc(common, func(c attribute.KeyValue) bool { return c.Key == kv.Key }) {
			rest = append(rest, fmt.Sprintf("%s=%s", kv.Key, kv.Value.String()))
		}
	}
	if len(rest) == 0 {
		return name
	}
	return name + "{" + strings.Join(rest, ",") + "}"
}

// Counter, UpDown and Gauge are wanted points: a counter, an up-down counter and a gauge.
func Counter(unit string, v uint64) Point { return Point{"counter", unit, float64(v)} }
func UpDown(unit string, v int) Point     { return Point{"updown", unit, float64(v)} }
func Gauge(unit string, v float64) Point {
	return Point{"gauge", unit, v}
}

// Check compares every collected point with want: the same instruments
// and attributes, kinds, units and values.
func Check(t testing.TB, got, want map[string]Point) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("collected points (-want +got):\n%s", diff)
	}
}
