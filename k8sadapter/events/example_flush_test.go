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

// In a scheduler's unit test: record through the code under test, Flush,
// then look in the fake clientset. No polling, no sleeping.
func ExampleEventBroadcaster_Flush() {
	ctx := klog.NewContext(context.Background(), logr.Discard())
	client := fake.NewClientset()
	broadcaster := events.NewBroadcaster(&clientevents.EventSinkImpl{Interface: client.EventsV1()})
	defer broadcaster.Shutdown()
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		fmt.Println("start:", err)
		return
	}
	recorder := broadcaster.NewRecorder(scheme.Scheme, "my-scheduler")

	// The code under test records events; the second is the same event
	// again, which makes a series.
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"}}
	recorder.Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "0/%d nodes are available", 3)
	recorder.Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "0/%d nodes are available", 4)

	// The test waits until they are in the apiserver, then looks.
	if err := broadcaster.Flush(ctx); err != nil {
		fmt.Println("flush:", err)
		return
	}
	list, err := client.EventsV1().Events("shop").List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Println("list:", err)
		return
	}
	for _, e := range list.Items {
		fmt.Println(e.Reason, e.Note, "series:", e.Series.Count)
	}
	// Output:
	// FailedScheduling 0/3 nodes are available series: 2
}
