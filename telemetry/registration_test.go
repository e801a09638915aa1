package telemetry_test

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/correlate"
	"github.com/heraldgo/herald/telemetry"
	"github.com/heraldgo/herald/telemetry/internal/metrictest"
)

// TestSecondRegistrationRefused: registering a component a second time
// under the same name with the same meter is an error naming it, and the
// counts are reported once (7 published, 7 reported, not 14); another
// name is taken, and once the first is unregistered, the name is free.
func TestSecondRegistrationRefused(t *testing.T) {
	meter, reader := metrictest.NewMeter(t)
	b := broadcast.New[int](broadcast.Options{})
	defer b.Shutdown(context.Background())
	c := correlate.New(func(s string) string { return s }, correlate.Options[string, string]{})
	for range 7 {
		_ = b.Publish(context.Background(), 1)
		_, _ = c.Correlate("disk full")
	}
	tests := []struct {
		kind     string
		register func(name string) (metric.Registration, error)
		point    string // the point that counts the 7
		want     metrictest.Point
	}{
		{"broadcaster", func(name string) (metric.Registration, error) { return telemetry.Broadcaster(meter, name, b) },
			"messaging.client.sent.messages{messaging.operation.name=publish,messaging.system=herald}",
			metrictest.Counter("{message}", 7)},
		{"correlator", func(name string) (metric.Registration, error) { return telemetry.Correlator(meter, name, c) },
			"herald.correlate.results{herald.correlate.key=repeat}",
			metrictest.Counter("{result}", 6)}, // the first was new
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			first, err := tc.register("orders")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tc.register("orders"); err == nil || !strings.Contains(err.Error(), tc.kind+` "orders" is already registered`) {
				t.Fatalf("second registration under one name: err = %v, want one naming %s \"orders\"", err, tc.kind)
			}
			dest := attribute.String("messaging.destination.name", "orders")
			if got := metrictest.Collect(t, reader, dest)[tc.point]; got != tc.want {
				t.Errorf("%s = %+v after a refused second registration, want %+v", tc.point, got, tc.want)
			}
			other, err := tc.register("payments")
			if err != nil {
				t.Fatalf("another name: %v", err)
			}
			if err := other.Unregister(); err != nil {
				t.Fatal(err)
			}
			if err := first.Unregister(); err != nil {
				t.Fatal(err)
			}
			again, err := tc.register("orders")
			if err != nil {
				t.Fatalf("after Unregister, the name is not free: %v", err)
			}
			if err := again.Unregister(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRegistrationPerMeter: the same name on two meters is two
// registrations, each reported by its own meter.
func TestRegistrationPerMeter(t *testing.T) {
	m1, _ := metrictest.NewMeter(t)
	m2, _ := metrictest.NewMeter(t)
	b := broadcast.New[int](broadcast.Options{})
	defer b.Shutdown(context.Background())
	for _, m := range []metric.Meter{m1, m2} {
		reg, err := telemetry.Broadcaster(m, "orders", b)
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()
	}
}
