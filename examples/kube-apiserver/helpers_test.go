package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/k8sadapter"
)

// logged returns a context whose logger writes to t's log, for the
// broadcasters' WithContext. A broadcaster using it must be shut down
// before t ends.
func logged(t *testing.T) context.Context {
	return klog.NewContext(t.Context(), testr.New(t))
}

// createNamespace creates namespace ns for events to be stored in.
func createNamespace(t *testing.T, ns string) {
	t.Helper()
	if _, err := server.Client.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
}

// stored returns the events the apiserver holds in namespace ns.
func stored(t *testing.T, ns string) []v1.Event {
	t.Helper()
	list, err := server.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list events in %s: %v", ns, err)
	}
	return list.Items
}

// eventually polls cond every 10 ms until it reports true, for at most a
// minute. The apiserver answers in its own time and offers nothing to wait
// on; herald's Stats neither.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// pod returns a reference-only pod: events may be recorded about objects
// the apiserver does not hold.
func pod(ns, name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(ns + "/" + name)}}
}

// sinkTo returns the sink a controller passes to StartRecordingToSink.
func sinkTo() record.EventSink {
	return &typedcorev1.EventSinkImpl{Interface: server.Client.CoreV1().Events("")}
}

// startHerald starts a herald broadcaster recording into sink, shut down
// when t ends, and returns it, its sink watcher's handle and a recorder.
func startHerald(t *testing.T, sink record.EventSink, opts ...k8sadapter.BroadcasterOption) (*k8sadapter.EventBroadcaster, *k8sadapter.Handle, record.EventRecorder) {
	t.Helper()
	e := k8sadapter.NewBroadcaster(append([]k8sadapter.BroadcasterOption{k8sadapter.WithContext(logged(t))}, opts...)...)
	t.Cleanup(e.Shutdown)
	h := e.StartRecordingToSink(sink).(*k8sadapter.Handle)
	return e, h, e.NewRecorder(scheme.Scheme, source)
}

// settled reports whether every event queued to the sink of h has met its
// fate, by the invariant of k8sadapter.Stats.
func settled(e *k8sadapter.EventBroadcaster, h *k8sadapter.Handle) bool {
	return accounted(h.Stats()) == e.Stats().Queued
}

// accounted sums the fates of a sink's events.
func accounted(s k8sadapter.Stats) uint64 {
	return s.Created + s.Patched + s.SpamSkipped + s.DroppedSinkQueue + s.FailedConstruction +
		s.FailedRejected + s.FailedForbidden + s.FailedRetries + s.FailedShutdown + s.FailedPanic + s.Abandoned
}

// call is one call of a recordingSink and the apiserver's answer.
type call struct {
	verb string // create, update or patch
	err  error
}

// recordingSink is client-go's sink, noting every call and its answer, so
// that a test can count attempts.
type recordingSink struct {
	sink record.EventSink

	mu    sync.Mutex // guards calls
	calls []call
}

func (s *recordingSink) note(verb string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call{verb, err})
}

func (s *recordingSink) Create(e *v1.Event) (*v1.Event, error) {
	got, err := s.sink.Create(e)
	s.note("create", err)
	return got, err
}

func (s *recordingSink) Update(e *v1.Event) (*v1.Event, error) {
	got, err := s.sink.Update(e)
	s.note("update", err)
	return got, err
}

func (s *recordingSink) Patch(e *v1.Event, data []byte) (*v1.Event, error) {
	got, err := s.sink.Patch(e, data)
	s.note("patch", err)
	return got, err
}

// Calls returns the calls so far.
func (s *recordingSink) Calls() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]call(nil), s.calls...)
}

// String describes an answer for failure messages.
func (c call) String() string {
	switch {
	case c.err == nil:
		return c.verb + ": ok"
	case apierrors.ReasonForError(c.err) != metav1.StatusReasonUnknown:
		return c.verb + ": " + string(apierrors.ReasonForError(c.err))
	}
	return c.verb + ": " + c.err.Error()
}
