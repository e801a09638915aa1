package k8stelemetry_test

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/attribute"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	clientevents "k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/k8sadapter"
	"github.com/heraldgo/herald/k8sadapter/events"
	"github.com/heraldgo/herald/telemetry/internal/metrictest"
	"github.com/heraldgo/herald/telemetry/k8stelemetry"
)

// eventsWant is every metrictest.Point of either adapter, from the shared fields.
func eventsWant(third string, recorded, created, patched, thirdN, invalidObject, invalidType, closed, sinkQueue,
	abandoned, construction, rejected, forbidden, retriesExhausted, shutdown, panics, retries, handlerDropped uint64) map[string]metrictest.Point {
	const e = "{event}"
	return map[string]metrictest.Point{
		"herald.events.recorded":                                      metrictest.Counter(e, recorded),
		"herald.events.outcomes{herald.events.outcome=created}":       metrictest.Counter(e, created),
		"herald.events.outcomes{herald.events.outcome=patched}":       metrictest.Counter(e, patched),
		"herald.events.outcomes{herald.events.outcome=" + third + "}": metrictest.Counter(e, thirdN),
		"herald.events.dropped{herald.drop.reason=invalid_object}":    metrictest.Counter(e, invalidObject),
		"herald.events.dropped{herald.drop.reason=invalid_type}":      metrictest.Counter(e, invalidType),
		"herald.events.dropped{herald.drop.reason=closed}":            metrictest.Counter(e, closed),
		"herald.events.dropped{herald.drop.reason=sink_queue_full}":   metrictest.Counter(e, sinkQueue),
		"herald.events.dropped{herald.drop.reason=shutdown_timeout}":  metrictest.Counter(e, abandoned),
		"herald.events.failed{error.type=construction}":               metrictest.Counter(e, construction),
		"herald.events.failed{error.type=rejected}":                   metrictest.Counter(e, rejected),
		"herald.events.failed{error.type=forbidden}":                  metrictest.Counter(e, forbidden),
		"herald.events.failed{error.type=retries_exhausted}":          metrictest.Counter(e, retriesExhausted),
		"herald.events.failed{error.type=shutdown}":                   metrictest.Counter(e, shutdown),
		"herald.events.failed{error.type=panic}":                      metrictest.Counter(e, panics),
		"herald.events.retries":                                       metrictest.Counter("{attempt}", retries),
		"herald.events.handler.dropped":                               metrictest.Counter(e, handlerDropped),
	}
}

// TestEventBroadcaster reads every instrument of a core/v1 broadcaster that
// created, patched, refused an invalid type and dropped after Shutdown.
func TestEventBroadcaster(t *testing.T) {
	ctx := klog.NewContext(context.Background(), logr.Discard())
	meter, reader := metrictest.NewMeter(t)
	client := fake.NewClientset()
	b := k8sadapter.NewBroadcaster(k8sadapter.WithContext(ctx))
	reg, err := k8stelemetry.EventBroadcaster(meter, b)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	rec := b.NewRecorder(scheme.Scheme, v1.EventSource{Component: "shop"})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"}}
	rec.Event(pod, v1.EventTypeWarning, "FailedMount", "volume not found")
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rec.Event(pod, v1.EventTypeWarning, "FailedMount", "volume not found")
	rec.Event(pod, "Odd", "FailedMount", "volume not found")
	b.Shutdown()
	rec.Event(pod, v1.EventTypeWarning, "FailedMount", "after shutdown")

	got := metrictest.Collect(t, reader, attribute.String("herald.events.api", "core/v1"))
	s := b.Stats()
	metrictest.Check(t, got, eventsWant("spam_skipped", s.Recorded, s.Created, s.Patched, s.SpamSkipped,
		s.InvalidObject, s.InvalidType, s.DroppedClosed, s.DroppedSinkQueue, s.Abandoned,
		s.FailedConstruction, s.FailedRejected, s.FailedForbidden, s.FailedRetries, s.FailedShutdown, s.FailedPanic,
		s.Retries, s.DroppedWatcherQueue))
	if s.Created != 1 || s.Patched != 1 || s.InvalidType != 1 || s.DroppedClosed != 1 {
		t.Errorf("Stats = %+v: not the state the test means to build", s)
	}
}

// TestEvents reads every instrument of an events.k8s.io/v1 broadcaster
// whose series was written.
func TestEvents(t *testing.T) {
	ctx := klog.NewContext(context.Background(), logr.Discard())
	meter, reader := metrictest.NewMeter(t)
	client := fake.NewClientset()
	b := events.NewBroadcaster(&clientevents.EventSinkImpl{Interface: client.EventsV1()})
	reg, err := k8stelemetry.Events(meter, b)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	rec := b.NewRecorder(scheme.Scheme, "scheduler")
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"}}
	for range 3 {
		rec.Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "no nodes")
		if err := b.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	rec.Eventf(nil, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "no object")
	b.Shutdown() // writes the series' final count

	got := metrictest.Collect(t, reader, attribute.String("herald.events.api", "events.k8s.io/v1"))
	s := b.Stats()
	want := eventsWant("series_observed", s.Recorded, s.Created, s.Patched, s.SeriesObserved,
		s.InvalidObject, s.InvalidType, s.DroppedClosed, s.DroppedSinkQueue, s.Abandoned,
		s.FailedConstruction, s.FailedRejected, s.FailedForbidden, s.FailedRetries, s.FailedShutdown, s.FailedPanic,
		s.Retries, s.DroppedWatcherQueue)
	want["herald.events.series.writes"] = metrictest.Counter("{write}", s.SeriesWrites)
	want["herald.events.series.writes{error.type=failed}"] = metrictest.Counter("{write}", s.SeriesWriteFailures)
	metrictest.Check(t, got, want)
	if s.Created != 1 || s.Patched != 1 || s.SeriesObserved != 1 || s.InvalidObject != 1 || s.SeriesWrites == 0 {
		t.Errorf("Stats = %+v: not the state the test means to build", s)
	}
}
