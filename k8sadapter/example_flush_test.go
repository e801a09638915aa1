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

// In a controller's unit test: record through the code under test, Flush,
// then look in the fake clientset. No polling, no sleeping.
func ExampleEventBroadcaster_Flush() {
	ctx := klog.NewContext(context.Background(), logr.Discard())
	client := fake.NewClientset()
	broadcaster := k8sadapter.NewBroadcaster(k8sadapter.WithContext(ctx))
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "my-controller"})

	// The code under test records events.
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"}}
	recorder.Eventf(pod, v1.EventTypeWarning, "FailedMount", "volume %q not found", "data")
	recorder.Eventf(pod, v1.EventTypeWarning, "FailedMount", "volume %q not found", "data")

	// The test waits until they are in the apiserver, then looks.
	if err := broadcaster.Flush(ctx); err != nil {
		fmt.Println("flush:", err)
		return
	}
	events, err := client.CoreV1().Events("shop").List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Println("list:", err)
		return
	}
	for _, e := range events.Items {
		fmt.Println(e.Type, e.Reason, e.Count, e.Message)
	}
	// Output:
	// Warning FailedMount 2 volume "data" not found
}
