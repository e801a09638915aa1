package recordtest_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/k8sadapter/recordtest"
)

// reconcile stands for a controller's code: it records events through a
// record.EventRecorder, which the test gives it.
func reconcile(recorder record.EventRecorder, pod *v1.Pod) {
	recorder.Eventf(pod, v1.EventTypeWarning, "Failed", "Failed to pull image %q", "app:v2")
	recorder.AnnotatedEventf(pod, map[string]string{"attempt": "1"}, v1.EventTypeNormal, "BackOff", "Back-off pulling image")
}

// A test hands a Recorder to the code under test, then reads the events it
// kept, each with its object, type, reason, message and annotations, and
// asserts them with a Match.
func Example() {
	recorder := recordtest.New(recordtest.Options{})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "u1"}}

	reconcile(recorder, pod)

	for _, e := range recorder.Events() {
		fmt.Println(e)
	}
	failed := recordtest.Match{Type: v1.EventTypeWarning, Reason: "Failed", Name: "web-0"}
	fmt.Println(failed.Matches(recorder.Events()[0]))
	// In a test: recorder.ExpectEvent(t, failed)
	// Output:
	// Warning Failed Pod shop/web-0: "Failed to pull image \"app:v2\""
	// Normal BackOff Pod shop/web-0: "Back-off pulling image" annotations=map[attempt:1]
	// true
}

// Events recorded on another goroutine are waited for, bounded by a
// context: WaitFor returns as soon as a matching event is kept, without
// polling.
func ExampleRecorder_WaitFor() {
	recorder := recordtest.New(recordtest.Options{})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"}}
	done := make(chan struct{})
	go func() { // a controller's worker
		defer close(done)
		recorder.Event(pod, v1.EventTypeNormal, "Scheduled", "Assigned shop/web-0 to node-1")
		recorder.Event(pod, v1.EventTypeNormal, "Started", "Started container app")
	}()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := recorder.WaitFor(ctx, recordtest.Match{Reason: "Started"}.Matches)
	fmt.Println(e.Message, err)
	<-done
	// Output:
	// Started container app <nil>
}

// With Correlate, a Recorder keeps what a sink would store: repeats fold
// into one event with a count, similar messages are combined, and what
// the spam filter refuses is only counted. The fake clock stands still,
// so the 30 repeats come at one instant: 25 pass (the filter's burst).
func ExampleOptions_correlate() {
	clock := clocktesting.NewFakeClock(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	recorder := recordtest.New(recordtest.Options{Correlate: true, Clock: clock})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"}}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}

	for range 30 {
		recorder.Event(pod, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
	}
	for i := range 12 { // similar: the same object and reason, another message
		recorder.Eventf(node, v1.EventTypeNormal, "Pulling", "Pulling image layer %d of 12", i+1)
	}

	events := recorder.Events()
	fmt.Println(len(events), "events stored,", recorder.Skipped(), "calls skipped")
	fmt.Println(events[0].Count, events[0].Message)
	last := events[len(events)-1]
	fmt.Println(last.Count, last.Message)
	// Output:
	// 11 events stored, 5 calls skipped
	// 25 Back-off restarting failed container
	// 3 (combined from similar events): Pulling image layer 12 of 12
}

// A test written for record.FakeRecorder reads the same lines from
// Strings: "<type> <reason> <message>", with the object's kind and API
// version when IncludeObject is set, and the annotations.
func ExampleRecorder_Strings() {
	// Was: recorder := record.NewFakeRecorder(10); recorder.IncludeObject = true
	recorder := recordtest.New(recordtest.Options{IncludeObject: true})
	pod := &v1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"},
	}

	reconcile(recorder, pod)

	// Was: for range 2 { fmt.Println(<-recorder.Events) }
	for _, line := range recorder.Strings() {
		fmt.Println(line)
	}
	// Output:
	// Warning Failed Failed to pull image "app:v2" involvedObject{kind=Pod,apiVersion=v1}
	// Normal BackOff Back-off pulling image involvedObject{kind=Pod,apiVersion=v1} map[attempt:1]
}

// The events.k8s.io API's recorder keeps its events in the same Recorder,
// with the related object and the action.
func ExampleRecorder_EventsRecorder() {
	recorder := recordtest.New(recordtest.Options{})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"}}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}

	recorder.EventsRecorder().Eventf(pod, node, v1.EventTypeNormal, "Scheduled", "Binding", "Assigned %s to %s", pod.Name, node.Name)

	e := recorder.Events()[0]
	fmt.Println(e)
	fmt.Println(recorder.Strings()[0])
	// Output:
	// Normal Scheduled action=Binding Pod shop/web-0 related=Node node-1: "Assigned web-0 to node-1"
	// Normal Scheduled Assigned web-0 to node-1
}
