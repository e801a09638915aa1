package events_test

import (
	"context"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	clientevents "k8s.io/client-go/tools/events"

	"github.com/heraldgo/herald/k8sadapter/events"
)

// TestShutdownAfterRecordingContextEndWritesOpenSeries is the usual
// controller ending: the recording context ends (a signal), then the
// deferred Shutdown runs. Shutdown promises every open series its final
// count; the series' later events, counted as SeriesObserved, reach the
// sink.
func TestShutdownAfterRecordingContextEndWritesOpenSeries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := trackerClientset()
		e := events.NewBroadcaster(&clientevents.EventSinkImpl{Interface: client.EventsV1()})
		ctx, cancel := context.WithCancel(quiet)
		if err := e.StartRecordingToSinkWithContext(ctx); err != nil {
			t.Fatal(err)
		}
		r := e.NewRecorder(scheme.Scheme, "c")
		const calls = 5
		for range calls {
			r.Eventf(pod("a"), nil, v1.EventTypeWarning, "BackOff", "Restarting", "x")
			if err := e.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		synctest.Wait() // the writer has seen its context end
		if err := e.ShutdownContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		list, err := client.EventsV1().Events("").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 || list.Items[0].Series == nil || list.Items[0].Series.Count != calls {
			t.Errorf("stored %d events (%+v), want one series of count %d; Stats() = %+v", len(list.Items), list.Items, calls, e.Stats())
		}
	})
}
