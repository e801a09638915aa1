package events_test

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clientevents "k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/k8sadapter/events"
)

// A scheduler records events.k8s.io/v1 events through herald: repeats of
// an event form a series, and the series' count is stored by Shutdown at
// the latest, which client-go leaves to a pass minutes later (or never,
// if the program exits first). Repeats recorded while the series' first
// event waits for the writer are folded into it: the writer stores their
// count with the series' first patch.
func Example() {
	client := fake.NewClientset() // a real program has a real clientset
	ctx := klog.NewContext(context.Background(), logr.Discard())

	broadcaster := events.NewBroadcaster(&clientevents.EventSinkImpl{Interface: client.EventsV1()}) // was: clientevents.NewBroadcaster(…)
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		fmt.Println(err)
	}
	recorder := broadcaster.NewRecorder(scheme.Scheme, "my-scheduler")

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"}}
	for range 5 {
		recorder.Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "0/%d nodes are available", 3)
	}
	if err := broadcaster.ShutdownContext(ctx); err != nil { // flushes
		fmt.Println(err)
	}

	list, _ := client.EventsV1().Events("shop").List(ctx, metav1.ListOptions{})
	for _, e := range list.Items {
		fmt.Println(e.ReportingController, e.Reason, e.Note, "- series of", e.Series.Count)
	}
	s := broadcaster.Stats()
	fmt.Println("recorded", s.Recorded, "= created", s.Created, "+ patched", s.Patched, "+ counted in the series", s.SeriesObserved)
	// Output:
	// my-scheduler FailedScheduling 0/3 nodes are available - series of 5
	// recorded 5 = created 1 + patched 1 + counted in the series 3
}

// The switch from client-go: events.NewBroadcaster where a program had
// client-go's events.NewBroadcaster, with the same sink; the value is a
// client-go events.EventBroadcaster, and the rest is client-go's API.
func ExampleNewBroadcaster() {
	client := fake.NewClientset()
	stop := make(chan struct{})

	var broadcaster clientevents.EventBroadcaster = events.NewBroadcaster(&clientevents.EventSinkImpl{Interface: client.EventsV1()})
	broadcaster.StartRecordingToSink(stop)
	recorder := broadcaster.NewRecorder(scheme.Scheme, "my-controller")

	recorder.Eventf(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"}}, nil,
		v1.EventTypeNormal, "Started", "Start", "Started container %s", "app")
	broadcaster.Shutdown() // writes what is queued, then stops
	close(stop)

	list, _ := client.EventsV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	for _, e := range list.Items {
		fmt.Println(e.Regarding.Name, e.Type, e.Reason, e.Action, e.Note)
	}
	// Output:
	// web-0 Normal Started Start Started container app
}
