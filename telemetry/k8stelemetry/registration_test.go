package k8stelemetry_test

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel/metric"
	"k8s.io/client-go/kubernetes/fake"
	clientevents "k8s.io/client-go/tools/events"

	"github.com/heraldgo/herald/k8sadapter"
	"github.com/heraldgo/herald/k8sadapter/events"
	"github.com/heraldgo/herald/telemetry/internal/metrictest"
	"github.com/heraldgo/herald/telemetry/k8stelemetry"
)

// TestSecondRegistrationRefused: one meter takes one broadcaster of each
// API; a second (the same one, or another of the same API) is refused
// with an error naming the API, until the first is unregistered. The two
// APIs do not collide.
func TestSecondRegistrationRefused(t *testing.T) {
	meter, _ := metrictest.NewMeter(t)
	core1, core2 := k8sadapter.NewBroadcaster(), k8sadapter.NewBroadcaster()
	defer core1.Shutdown()
	defer core2.Shutdown()
	sink := &clientevents.EventSinkImpl{Interface: fake.NewClientset().EventsV1()}
	ev := events.NewBroadcaster(sink)
	defer ev.Shutdown()

	first, err := k8stelemetry.EventBroadcaster(meter, core1)
	if err != nil {
		t.Fatal(err)
	}
	evReg, err := k8stelemetry.Events(meter, ev)
	if err != nil {
		t.Fatalf("events.k8s.io/v1 beside core/v1: %v", err)
	}
	defer evReg.Unregister()
	for _, second := range []func() (metric.Registration, error){
		func() (metric.Registration, error) { return k8stelemetry.EventBroadcaster(meter, core1) },
		func() (metric.Registration, error) { return k8stelemetry.EventBroadcaster(meter, core2) },
	} {
		if _, err := second(); err == nil || !strings.Contains(err.Error(), "core/v1 event broadcaster is already registered") {
			t.Errorf("second core/v1 registration: err = %v, want one naming core/v1", err)
		}
	}
	if _, err := k8stelemetry.Events(meter, ev); err == nil {
		t.Error("second events.k8s.io/v1 registration: err = nil")
	}
	if err := first.Unregister(); err != nil {
		t.Fatal(err)
	}
	again, err := k8stelemetry.EventBroadcaster(meter, core2)
	if err != nil {
		t.Fatalf("after Unregister: %v", err)
	}
	_ = again.Unregister()
}
