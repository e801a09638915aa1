package k8sadapter_test

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/k8sadapter"
)

// Recording events as a controller does, with herald in place of
// client-go's broadcaster: repeats become one event with a count, and
// Shutdown flushes them to the apiserver.
func Example() {
	ExampleNewBroadcaster()
	// Output:
	// BackOff 3 Back-off restarting failed container
	// created 1 patched 2
}

// The one-line switch: k8sadapter.NewBroadcaster where a controller had
// record.NewBroadcaster; the rest is client-go's API.
func ExampleNewBroadcaster() {
	client := fake.NewClientset() // a real controller has a real clientset
	quiet := klog.NewContext(context.Background(), logr.Discard())

	broadcaster := k8sadapter.NewBroadcaster(k8sadapter.WithContext(quiet)) // was: record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "my-controller"})

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"}}
	for range 3 {
		recorder.Event(pod, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
	}
	broadcaster.Shutdown() // flushes: every event above reaches the apiserver

	events, _ := client.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	for _, e := range events.Items {
		fmt.Println(e.Reason, e.Count, e.Message)
	}
	s := broadcaster.Stats()
	fmt.Println("created", s.Created, "patched", s.Patched)
	// Output:
	// BackOff 3 Back-off restarting failed container
	// created 1 patched 2
}
