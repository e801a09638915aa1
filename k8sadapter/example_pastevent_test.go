package k8sadapter_test

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/k8sadapter"
)

// PastEventf records something that happened earlier, such as a failure
// read from a log, with the time it happened rather than the time now.
func ExampleRecorder_PastEventf() {
	client := fake.NewClientset()
	quiet := klog.NewContext(context.Background(), logr.Discard())
	broadcaster := k8sadapter.NewBroadcaster(k8sadapter.WithContext(quiet))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	// NewRecorder returns client-go's interface, which has no PastEventf.
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "log-scanner"}).(*k8sadapter.Recorder)

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"}}
	oom := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, at := range []time.Time{oom, oom.Add(5 * time.Minute)} { // read from a log, in order
		recorder.PastEventf(pod, metav1.NewTime(at), v1.EventTypeWarning, "OOMKilled", "container %s was OOM-killed", "app")
	}
	broadcaster.Shutdown() // flushes: both events reach the apiserver

	events, _ := client.CoreV1().Events("shop").List(quiet, metav1.ListOptions{})
	for _, e := range events.Items { // the repeat became a count on one event
		fmt.Println("first:", e.FirstTimestamp.UTC().Format(time.RFC3339))
		fmt.Println("last: ", e.LastTimestamp.UTC().Format(time.RFC3339))
		fmt.Println("count:", e.Count, "message:", e.Message)
	}
	// Output:
	// first: 2025-03-01T09:00:00Z
	// last:  2025-03-01T09:05:00Z
	// count: 2 message: container app was OOM-killed
}
