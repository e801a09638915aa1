package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	testclock "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/examples/kube-apiserver/apiserver"
	"github.com/heraldgo/herald/k8sadapter"
)

// server is one apiserver shared by the tests of this package; each test
// works in namespaces of its own.
var server *apiserver.Server

func TestMain(m *testing.M) {
	quiet()
	s, err := apiserver.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start apiserver:", err)
		os.Exit(1)
	}
	server = s
	code := m.Run()
	s.Stop()
	if code == 0 {
		code = verifyNoLeaks()
	}
	os.Exit(code)
}

var (
	ctx    = context.Background()
	silent = klog.NewContext(context.Background(), logr.Discard())
	source = v1.EventSource{Component: "test-controller", Host: "node-1"}
)

func namespace(t *testing.T, name string) {
	t.Helper()
	if err := createNamespace(ctx, server.Client, name); err != nil {
		t.Fatal(err)
	}
}

func stored(t *testing.T, ns string) []v1.Event {
	t.Helper()
	list, err := server.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// summary is what must be equal between the two recorders: everything
// but names, resource versions, namespaces, UIDs and the timestamps that
// client-go's recorder takes from the real clock.
func summary(events []v1.Event) []string {
	var lines []string
	for _, e := range events {
		lines = append(lines, fmt.Sprintf("%s/%s %s %s count=%d %q src=%s/%s rc=%s first<last=%v",
			e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Type, e.Reason, e.Count, e.Message,
			e.Source.Component, e.Source.Host, e.ReportingController, e.FirstTimestamp.Before(&e.LastTimestamp)))
	}
	sort.Strings(lines)
	return lines
}

func sink(ns string) record.EventSink {
	return &typedcorev1.EventSinkImpl{Interface: server.Client.CoreV1().Events("")}
}

// TestSameEventsAsClientGo records the same script through client-go's
// broadcaster and herald's into the same apiserver, in two namespaces, and
// compares what the server stored.
func TestSameEventsAsClientGo(t *testing.T) {
	namespace(t, "clientgo")
	namespace(t, "herald")
	start := time.Now()
	clk := testclock.NewFakeClock(start) // the correlators' clock, for both
	opts := record.CorrelatorOptions{Clock: clk}

	anchor := record.NewBroadcaster(record.WithContext(silent), record.WithCorrelatorOptions(opts))
	anchor.StartRecordingToSink(sink("clientgo"))
	ar := anchor.NewRecorder(scheme.Scheme, source)
	// Event names embed the recorder's clock: it must move, as real
	// clocks do, or events about one object would share a name.
	tick := func() { clk.Step(time.Millisecond) }
	Script(ar, "clientgo", tick)
	// client-go's Shutdown drops what is queued: wait for a last event.
	ar.Event(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sentinel", Namespace: "clientgo"}}, v1.EventTypeNormal, "Done", "done")
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(strings.Join(summary(stored(t, "clientgo")), "\n"), "Done") {
		if time.Now().After(deadline) {
			t.Fatal("client-go did not store its last event within a minute")
		}
		time.Sleep(20 * time.Millisecond) // bounded poll: client-go offers no flush
	}
	anchor.Shutdown()

	herald := k8sadapter.NewBroadcaster(k8sadapter.WithContext(silent), k8sadapter.WithCorrelatorOptions(opts), k8sadapter.WithClock(clk))
	herald.StartRecordingToSink(sink("herald"))
	hr := herald.NewRecorder(scheme.Scheme, source)
	clk.SetTime(start)
	Script(hr, "herald", tick)
	hr.Event(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sentinel", Namespace: "herald"}}, v1.EventTypeNormal, "Done", "done")
	herald.Shutdown()

	want, got := summary(stored(t, "clientgo")), summary(stored(t, "herald"))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stored by herald:\n%s\n\nstored by client-go:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(got) != 13 {
		t.Errorf("%d events stored, want 13", len(got))
	}
	// herald's timestamps come from the fake clock (client-go's recorder
	// has only the real one): within the script's 60 ms of fake time.
	for _, e := range stored(t, "herald") {
		if d := e.LastTimestamp.Sub(start.Truncate(time.Second)); d < 0 || d > time.Second {
			t.Errorf("%s: lastTimestamp %v, want the fake clock's time %v", e.Name, e.LastTimestamp, start)
		}
	}
}

// TestRepeatOfDeletedEventIsCreated: the server deleted the event (TTL, or
// an operator) between two occurrences: the patch finds nothing, and the
// event is created again with the count it has reached.
func TestRepeatOfDeletedEventIsCreated(t *testing.T) {
	namespace(t, "deleted")
	e := k8sadapter.NewBroadcaster(k8sadapter.WithContext(silent))
	defer e.Shutdown()
	h := e.StartRecordingToSink(sink("deleted")).(*k8sadapter.Handle)
	r := e.NewRecorder(scheme.Scheme, source)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "deleted", UID: "u"}}
	r.Event(pod, v1.EventTypeWarning, "BackOff", "back-off")
	waitFor(t, func() bool { return h.Stats().Created == 1 })
	first := stored(t, "deleted")
	if err := server.Client.CoreV1().Events("deleted").Delete(ctx, first[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Event(pod, v1.EventTypeWarning, "BackOff", "back-off")
	waitFor(t, func() bool { return h.Stats().Created == 2 })
	got := stored(t, "deleted")
	if len(got) != 1 || got[0].Count != 2 || got[0].Name != first[0].Name {
		t.Errorf("after deletion and a repeat: %v, want the same event re-created with count 2", summary(got))
	}
	if s := h.Stats(); s.Patched != 0 || s.Retries != 0 {
		t.Errorf("Stats() = %+v, want no patch and no retry", s)
	}
}

// TestNamespaceTerminatingIsFinal: events for a namespace being deleted are
// refused with the NamespaceTerminating cause; client-go gives up at once,
// and so does herald.
func TestNamespaceTerminatingIsFinal(t *testing.T) {
	namespace(t, "doomed")
	// No namespace controller runs here, so the namespace stays
	// Terminating.
	if err := server.Client.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e := k8sadapter.NewBroadcaster(k8sadapter.WithContext(silent), k8sadapter.WithSleepDuration(10*time.Millisecond))
	defer e.Shutdown()
	h := e.StartRecordingToSink(sink("doomed")).(*k8sadapter.Handle)
	r := e.NewRecorder(scheme.Scheme, source)
	r.Event(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "doomed"}}, v1.EventTypeNormal, "Started", "too late")
	waitFor(t, func() bool { return h.Stats().FailedRejected == 1 })
	if s := h.Stats(); s.Retries != 0 || s.Created != 0 {
		t.Errorf("Stats() = %+v, want one rejected attempt", s)
	}
}

// TestServerRejectsInvalidEvent: an event the apiserver's validation
// refuses (here, an annotation key that is not a valid name) is given up on
// at once, counted as rejected.
func TestServerRejectsInvalidEvent(t *testing.T) {
	namespace(t, "invalid")
	e := k8sadapter.NewBroadcaster(k8sadapter.WithContext(silent), k8sadapter.WithSleepDuration(10*time.Millisecond))
	defer e.Shutdown()
	h := e.StartRecordingToSink(sink("invalid")).(*k8sadapter.Handle)
	r := e.NewRecorder(scheme.Scheme, source)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "invalid"}}
	r.AnnotatedEventf(pod, map[string]string{"not a valid key!": "x"}, v1.EventTypeNormal, "Started", "annotated")
	r.Event(pod, v1.EventTypeNormal, "Started", "plain")
	waitFor(t, func() bool { s := h.Stats(); return s.FailedRejected == 1 && s.Created == 1 })
	if got := stored(t, "invalid"); len(got) != 1 || got[0].Message != "plain" {
		t.Errorf("stored %v, want only the valid event", summary(got))
	}
	// The apiserver's answer is indeed a validation error.
	bad := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "invalid", Annotations: map[string]string{"not a valid key!": "x"}},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "web-0", Namespace: "invalid"}}
	if _, err := server.Client.CoreV1().Events("invalid").Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("direct create = %v, want an Invalid error", err)
	}
}

// TestShutdownFlushesPendingEvents: 500 events on distinct objects, then
// Shutdown at once: all 500 are in the apiserver when it returns.
func TestShutdownFlushesPendingEvents(t *testing.T) {
	namespace(t, "flush")
	e := k8sadapter.NewBroadcaster(k8sadapter.WithContext(silent), k8sadapter.WithShutdownTimeout(2*time.Minute))
	e.StartRecordingToSink(sink("flush"))
	r := e.NewRecorder(scheme.Scheme, source)
	for i := range 500 {
		r.Event(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("web-", i), Namespace: "flush", UID: types.UID(fmt.Sprint(i))}},
			v1.EventTypeNormal, "Scheduled", "assigned")
	}
	pending := 500 - e.Stats().Created
	e.Shutdown()
	if got := len(stored(t, "flush")); got != 500 {
		t.Errorf("%d events stored after Shutdown, want 500", got)
	}
	if s := e.Stats(); s.Created != 500 {
		t.Errorf("Stats() = %+v, want 500 created", s)
	}
	t.Logf("%d of 500 were still pending when Shutdown was called", pending)
}

// waitFor polls cond for up to a minute: the apiserver answers in its own
// time.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAPIServerRestart stops the apiserver while events are being
// recorded and starts it again: the events recorded meanwhile are retried
// until it is back, none is stored twice, and the counters add up.
func TestAPIServerRestart(t *testing.T) {
	namespace(t, "restart")
	e := k8sadapter.NewBroadcaster(k8sadapter.WithContext(silent), k8sadapter.WithSleepDuration(100*time.Millisecond), k8sadapter.WithMaxTries(200))
	defer e.Shutdown()
	h := e.StartRecordingToSink(sink("restart")).(*k8sadapter.Handle)
	r := e.NewRecorder(scheme.Scheme, source)
	pod := func(i int) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("web-", i), Namespace: "restart", UID: types.UID(fmt.Sprint(i))}}
	}
	for i := range 20 {
		r.Event(pod(i), v1.EventTypeNormal, "Scheduled", "assigned")
	}
	waitFor(t, func() bool { return h.Stats().Created == 20 })

	server.StopAPIServer()
	for i := range 40 { // 20 new objects, and a repeat for each of the first 20
		r.Event(pod(i), v1.EventTypeNormal, "Scheduled", "assigned")
	}
	waitFor(t, func() bool { return h.Stats().Retries > 0 }) // failing, and retrying
	if err := server.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { s := h.Stats(); return s.Created+s.Patched+s.FailedRejected == 60 })

	s := h.Stats()
	got := stored(t, "restart")
	byObject := map[string][]v1.Event{}
	for _, ev := range got {
		byObject[ev.InvolvedObject.Name] = append(byObject[ev.InvolvedObject.Name], ev)
	}
	for i := range 40 {
		evs := byObject[fmt.Sprint("web-", i)]
		want := int32(1)
		if i < 20 {
			want = 2
		}
		if len(evs) != 1 || evs[0].Count != want {
			t.Errorf("web-%d: stored %v, want one event with count %d", i, summary(evs), want)
		}
	}
	if s.Created+s.Patched+s.FailedRejected+s.FailedRetries+s.FailedShutdown != e.Stats().Queued {
		t.Errorf("counters do not add up to the %d queued: %+v", e.Stats().Queued, s)
	}
	t.Logf("retries while the apiserver was down: %d; stats %+v", s.Retries, s)
}

// TestDemo runs the demo, with a second apiserver of its own, and checks
// what it prints.
func TestDemo(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"demo       Warning  BackOff    pod/checkout-7d9f  8      Back-off restarting failed container",
		"demo       Normal   Pulling    pod/search-5c2b    3      (combined from similar events): Pulling image layer 12 of 12",
		"demo       Warning  Unhealthy  pod/cart-0         25     Readiness probe failed",
		"recorded 60: created 12, patched 33 (repeats 31, combined 3), spam-skipped 15, dropped 0, failed 0",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}
