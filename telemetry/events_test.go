package telemetry_test

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
	"github.com/heraldgo/herald/telemetry"
)

// eventsWant is every point of either adapter, from the shared fields.
func eventsWant(third string, recorded, created, patched, thirdN, invalidObject, invalidType, closed, sinkQueue,
	abandoned, construction, rejected, forbidden, retriesExhausted, shutdown, panics, retries, handlerDropped uint64) map[string]point {
	const e = "{event}"
	return map[string]point{
		"herald.events.recorded":                                      counter(e, recorded),
		"herald.events.outcomes{herald.events.outcome=created}":       counter(e, created),
		"herald.events.outcomes{herald.events.outcome=patched}":       counter(e, patched),
		"herald.events.outcomes{herald.events.outcome=" + third + "}": counter(e, thirdN),
		"herald.events.dropped{herald.drop.reason=invalid_object}":    counter(e, invalidObject),
		"herald.events.dropped{herald.drop.reason=invalid_type}":      counter(e, invalidType),
		"herald.events.dropped{herald.drop.reason=closed}":            counter(e, closed),
		"herald.events.dropped{herald.drop.reason=sink_queue_full}":   counter(e, sinkQueue),
		"herald.events.dropped{herald.drop.reason=shutdown_timeout}":  counter(e, abandoned),
		"herald.events.failed{error.type=construction}":               counter(e, construction),
		"herald.events.failed{error.type=rejected}":                   counter(e, rejected),
		"herald.events.failed{error.type=forbidden}":                  counter(e, forbidden),
		"herald.events.failed{error.type=retries_exhausted}":          counter(e, retriesExhausted),
		"herald.events.failed{error.type=shutdown}":                   counter(e, shutdown),
		"herald.events.failed{error.type=panic}":                      counter(e, panics),
		"herald.events.retries":                                       counter("{attempt}", retries),
		"herald.events.handler.dropped":                               counter(e, handlerDropped),
	}
}

// TestEventBroadcaster reads every instrument of a core/v1 broadcaster that
// created, patched, refused an invalid type and dropped after Shutdown.
func TestEventBroadcaster(t *testing.T) {
	ctx := klog.NewContext(context.Background(), logr.Discard())
	meter, reader := newMeter(t)
	client := fake.NewClientset()
	b := k8sadapter.NewBroadcaster(k8sadapter.WithContext(ctx))
	reg, err := telemetry.EventBroadcaster(meter, b)
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

	got := collect(t, reader, attribute.String("herald.events.api", "core/v1"))
	s := b.Stats()
	check(t, got, eventsWant("spam_skipped", s.Recorded, s.Created, s.Patched, s.SpamSkipped,
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
	meter, reader := newMeter(t)
	client := fake.NewClientset()
	b := events.NewBroadcaster(&clientevents.EventSinkImpl{Interface: client.EventsV1()})
	reg, err := telemetry.Events(meter, b)
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

	got := collect(t, reader, attribute.String("herald.events.api", "events.k8s.io/v1"))
	s := b.Stats()
	want := eventsWant("series_observed", s.Recorded, s.Created, s.Patched, s.SeriesObserved,
		s.InvalidObject, s.InvalidType, s.DroppedClosed, s.DroppedSinkQueue, s.Abandoned,
		s.FailedConstruction, s.FailedRejected, s.FailedForbidden, s.FailedRetries, s.FailedShutdown, s.FailedPanic,
		s.Retries, s.DroppedWatcherQueue)
	want["herald.events.series.writes"] = counter("{write}", s.SeriesWrites)
	want["herald.events.series.writes{error.type=failed}"] = counter("{write}", s.SeriesWriteFailures)
	check(t, got, want)
	if s.Created != 1 || s.Patched != 1 || s.SeriesObserved != 1 || s.InvalidObject != 1 || s.SeriesWrites == 0 {
		t.Errorf("Stats = %+v: not the state the test means to build", s)
	}
}
