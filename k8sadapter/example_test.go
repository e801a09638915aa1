package k8sadapter_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/k8sadapter"
)

// A controller records events about a pod through herald: repeats become
// one event with a count, a burst of similar messages one combined event,
// and ShutdownContext writes everything to the apiserver before the
// program goes on. The events stored are the ones client-go would store.
func Example() {
	client := fake.NewClientset() // a controller has a real clientset
	ctx := klog.NewContext(context.Background(), logr.Discard())

	broadcaster := k8sadapter.NewBroadcaster(k8sadapter.WithContext(ctx)) // was: record.NewBroadcaster(…)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "my-controller"})

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"}}
	for range 3 {
		recorder.Event(pod, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
	}
	for i := range 12 { // similar: the same object and reason, another message
		recorder.Eventf(pod, v1.EventTypeNormal, "Pulling", "Pulling image layer %d of 12", i+1)
	}
	if err := broadcaster.ShutdownContext(ctx); err != nil { // flushes every event recorded above
		fmt.Println(err)
	}

	list, _ := client.CoreV1().Events("shop").List(ctx, metav1.ListOptions{})
	events := list.Items
	slices.SortFunc(events, func(a, b v1.Event) int {
		return strings.Compare(a.Reason+a.Message, b.Reason+b.Message)
	})
	for _, e := range events {
		fmt.Printf("%-8s %d  %s\n", e.Reason, e.Count, e.Message)
	}
	s := broadcaster.Stats()
	fmt.Printf("recorded %d: created %d, patched %d\n", s.Recorded, s.Created, s.Patched)
	// Output:
	// BackOff  3  Back-off restarting failed container
	// Pulling  3  (combined from similar events): Pulling image layer 12 of 12
	// Pulling  1  Pulling image layer 1 of 12
	// Pulling  1  Pulling image layer 2 of 12
	// Pulling  1  Pulling image layer 3 of 12
	// Pulling  1  Pulling image layer 4 of 12
	// Pulling  1  Pulling image layer 5 of 12
	// Pulling  1  Pulling image layer 6 of 12
	// Pulling  1  Pulling image layer 7 of 12
	// Pulling  1  Pulling image layer 8 of 12
	// Pulling  1  Pulling image layer 9 of 12
	// recorded 15: created 11, patched 4
}

// The one-line switch: k8sadapter.NewBroadcaster where a controller had
// record.NewBroadcaster; the value is a record.EventBroadcaster, and the
// rest is client-go's API.
func ExampleNewBroadcaster() {
	client := fake.NewClientset()
	quiet := klog.NewContext(context.Background(), logr.Discard())

	var broadcaster record.EventBroadcaster = k8sadapter.NewBroadcaster(k8sadapter.WithContext(quiet))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "my-controller"})

	recorder.Event(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"}},
		v1.EventTypeNormal, "Started", "Started container app")
	broadcaster.Shutdown() // flushes: the event reaches the apiserver

	events, _ := client.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	for _, e := range events.Items {
		fmt.Println(e.Source.Component, e.Reason, e.Message)
	}
	// Output:
	// my-controller Started Started container app
}

// Stats says what became of every recorded event: each has one fate
// (written, spam-skipped, dropped, failed or abandoned), and the written
// ones are created or patched.
func ExampleEventBroadcaster_Stats() {
	client := fake.NewClientset()
	quiet := klog.NewContext(context.Background(), logr.Discard())
	broadcaster := k8sadapter.NewBroadcaster(k8sadapter.WithContext(quiet))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "my-controller"})

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cart-0", Namespace: "shop"}}
	for range 30 { // the spam filter lets 25 through, then one per 5 minutes
		recorder.Event(pod, v1.EventTypeWarning, "Unhealthy", "Readiness probe failed")
	}
	recorder.Event(pod, "Bogus", "Unhealthy", "not Normal or Warning") // refused
	broadcaster.Shutdown()

	s := broadcaster.Stats()
	fmt.Println("recorded:", s.Recorded)
	fmt.Println("written:", s.Created+s.Patched, "=", s.Created, "created +", s.Patched, "patched")
	fmt.Println("spam-skipped:", s.SpamSkipped)
	fmt.Println("refused:", s.InvalidType)
	// Output:
	// recorded: 31
	// written: 25 = 1 created + 24 patched
	// spam-skipped: 5
	// refused: 1
}
