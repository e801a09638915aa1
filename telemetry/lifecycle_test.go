package telemetry_test

import (
	"context"
	"testing"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/telemetry"
	"github.com/heraldgo/herald/telemetry/internal/metrictest"
)

// TestCollectAfterShutdown: a broadcaster registered, published
// to, then shut down, is still collected without a panic and with the
// published count; Unregister twice does not panic, and after it the
// broadcaster's points are gone.
func TestCollectAfterShutdown(t *testing.T) {
	meter, reader := metrictest.NewMeter(t)
	b := broadcast.New[int](broadcast.Options{})
	w, err := b.Watch()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := telemetry.Broadcaster(meter, "orders", b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := b.Publish(context.Background(), i); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	pts := metrictest.Collect(t, reader)
	found := false
	for k, p := range pts {
		if p.Kind == "counter" && p.Value == 3 {
			found = true
		}
		_ = k
	}
	if !found {
		t.Errorf("no counter of 3 published values after Shutdown: %v", pts)
	}
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
	if err := reg.Unregister(); err != nil {
		t.Logf("second Unregister: %v", err)
	}
	if pts := metrictest.Collect(t, reader); len(pts) != 0 {
		t.Errorf("points after Unregister: %v", pts)
	}
}

// TestNilComponents: a nil meter returns an error; a nil
// component either returns an error or panics at registration, never
// at collection.
func TestNilComponents(t *testing.T) {
	nb := broadcast.New[int](broadcast.Options{})
	defer func() { _ = nb.Shutdown(context.Background()) }()
	if _, err := telemetry.Broadcaster[int](nil, "x", nb); err == nil {
		t.Error("nil Meter: no error")
	}
	meter, reader := metrictest.NewMeter(t)
	func() {
		defer func() { _ = recover() }()
		reg, err := telemetry.Broadcaster[int](meter, "x", nil)
		if err == nil && reg != nil {
			defer func() { _ = reg.Unregister() }()
		}
	}()
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("Collect panicked after a nil broadcaster was registered: %v", r)
			}
		}()
		_ = metrictest.Collect(t, reader)
	}()
}
