package recordtest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/k8sadapter/recordtest"
)

var (
	pod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "u1", ResourceVersion: "7"}}
	// podRef is the reference client-go builds for pod from the scheme.
	podRef = v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "shop", Name: "web-0", UID: "u1", ResourceVersion: "7"}
	node   = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "n1"}}
	// nodeRef is node's reference: cluster-scoped, no namespace.
	nodeRef = v1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: "node-1", UID: "n1"}
)

// widget is an object no scheme knows.
type widget struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (w *widget) DeepCopyObject() runtime.Object { c := *w; return &c }

// TestEventFields checks every field of the event each kind of call keeps,
// at the fake clock's time.
func TestEventFields(t *testing.T) {
	ann := map[string]string{"a": "b"}
	tests := []struct {
		name    string
		record  func(r *recordtest.Recorder)
		want    recordtest.Event
		wantErr string // part of Err; the rest of want compared whole
	}{
		{"Event", func(r *recordtest.Recorder) { r.Event(pod, v1.EventTypeNormal, "Started", "Started container 100%") },
			recordtest.Event{Object: podRef, Type: "Normal", Reason: "Started", Message: "Started container 100%"}, ""},
		{"Eventf", func(r *recordtest.Recorder) { r.Eventf(pod, v1.EventTypeWarning, "Failed", "pull %q: %d", "app", 3) },
			recordtest.Event{Object: podRef, Type: "Warning", Reason: "Failed", Message: `pull "app": 3`}, ""},
		{"AnnotatedEventf", func(r *recordtest.Recorder) {
			r.AnnotatedEventf(pod, ann, v1.EventTypeNormal, "Synced", "gen %d", 2)
		}, recordtest.Event{Object: podRef, Type: "Normal", Reason: "Synced", Message: "gen 2", Annotations: ann}, ""},
		{"cluster-scoped object", func(r *recordtest.Recorder) { r.Event(node, v1.EventTypeNormal, "Ready", "ok") },
			recordtest.Event{Object: nodeRef, Type: "Normal", Reason: "Ready", Message: "ok"}, ""},
		{"reference with a field path", func(r *recordtest.Recorder) {
			r.Event(&v1.ObjectReference{Kind: "Pod", Name: "web-0", FieldPath: "spec.containers{app}"}, v1.EventTypeNormal, "Pulled", "ok")
		}, recordtest.Event{Object: v1.ObjectReference{Kind: "Pod", Name: "web-0", FieldPath: "spec.containers{app}"},
			Type: "Normal", Reason: "Pulled", Message: "ok"}, ""},
		{"typed object keeps its TypeMeta", func(r *recordtest.Recorder) {
			r.Event(&v1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "b"}},
				v1.EventTypeNormal, "R", "m")
		}, recordtest.Event{Object: v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Name: "a", Namespace: "b"}, Type: "Normal", Reason: "R", Message: "m"}, ""},
		{"nil object", func(r *recordtest.Recorder) { r.Event(nil, v1.EventTypeNormal, "R", "m") },
			recordtest.Event{Type: "Normal", Reason: "R", Message: "m"},
			"Could not construct reference, will not report event: can't reference a nil object"},
		{"typed nil object", func(r *recordtest.Recorder) { r.Event((*v1.Pod)(nil), v1.EventTypeNormal, "R", "m") },
			recordtest.Event{Type: "Normal", Reason: "R", Message: "m"}, "Could not construct reference, will not report event: "},
		{"object the scheme does not know", func(r *recordtest.Recorder) { r.Event(&widget{}, v1.EventTypeNormal, "R", "m") },
			recordtest.Event{Type: "Normal", Reason: "R", Message: "m"},
			"Could not construct reference, will not report event: no kind is registered for the type recordtest_test.widget"},
		{"unsupported type", func(r *recordtest.Recorder) { r.Event(pod, "Bogus", "R", "m") },
			recordtest.Event{Object: podRef, Type: "Bogus", Reason: "R", Message: "m"}, `Unsupported event type: "Bogus"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := clocktesting.NewFakeClock(t0)
			r := recordtest.New(recordtest.Options{Clock: clock})
			tc.record(r)
			checkOne(t, r, tc.want, tc.wantErr)
		})
	}
}

// checkOne checks that r kept one event, want at t0 with count 1, its Err
// containing wantErr (none if empty).
func checkOne(t *testing.T, r *recordtest.Recorder, want recordtest.Event, wantErr string) {
	t.Helper()
	got := r.Events()
	if len(got) != 1 {
		t.Fatalf("Events() = %v, want one event", got)
	}
	if !strings.Contains(got[0].Err, wantErr) || (wantErr == "") != (got[0].Err == "") {
		t.Errorf("Err = %q, want it to contain %q", got[0].Err, wantErr)
	}
	want.Err, want.FirstTime, want.Time, want.Count = got[0].Err, t0, t0, 1
	if d := cmp.Diff(want, got[0]); d != "" {
		t.Errorf("event differs (-want +got):\n%s", d)
	}
}

// TestEventsRecorderFields checks the fields of the events API's calls.
func TestEventsRecorderFields(t *testing.T) {
	tests := []struct {
		name    string
		record  func(r *recordtest.EventsRecorder)
		want    recordtest.Event
		wantErr string
	}{
		{"regarding and related", func(r *recordtest.EventsRecorder) {
			r.Eventf(pod, node, v1.EventTypeNormal, "Scheduled", "Binding", "to %s", "node-1")
		}, recordtest.Event{Object: podRef, Related: &nodeRef, Type: "Normal", Reason: "Scheduled", Action: "Binding", Message: "to node-1"}, ""},
		{"no related", func(r *recordtest.EventsRecorder) { r.Eventf(pod, nil, v1.EventTypeWarning, "Failed", "Pull", "no") },
			recordtest.Event{Object: podRef, Type: "Warning", Reason: "Failed", Action: "Pull", Message: "no"}, ""},
		{"related with no reference is left out", func(r *recordtest.EventsRecorder) {
			r.Eventf(pod, &widget{}, v1.EventTypeNormal, "R", "A", "n")
		}, recordtest.Event{Object: podRef, Type: "Normal", Reason: "R", Action: "A", Message: "n"}, ""},
		{"nil regarding", func(r *recordtest.EventsRecorder) { r.Eventf(nil, node, v1.EventTypeNormal, "R", "A", "n") },
			recordtest.Event{Related: &nodeRef, Type: "Normal", Reason: "R", Action: "A", Message: "n"},
			"Could not construct reference, will not report event: can't reference a nil object"},
		{"unsupported type", func(r *recordtest.EventsRecorder) { r.Eventf(pod, nil, "Info", "R", "A", "n") },
			recordtest.Event{Object: podRef, Type: "Info", Reason: "R", Action: "A", Message: "n"}, `Unsupported event type: "Info"`},
		{"WithLogger keeps with the rest", func(r *recordtest.EventsRecorder) {
			r.WithLogger(klog.Background()).Eventf(node, nil, v1.EventTypeNormal, "R", "A", "n")
		}, recordtest.Event{Object: nodeRef, Type: "Normal", Reason: "R", Action: "A", Message: "n"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := recordtest.New(recordtest.Options{Clock: clocktesting.NewFakeClock(t0), Correlate: true})
			tc.record(r.EventsRecorder())
			checkOne(t, r, tc.want, tc.wantErr)
		})
	}
}

// TestAnnotationsCopied checks that the caller's map, changed after the
// call, does not change the event kept.
func TestAnnotationsCopied(t *testing.T) {
	var r recordtest.Recorder
	ann := map[string]string{"a": "b"}
	r.AnnotatedEventf(pod, ann, v1.EventTypeNormal, "R", "m")
	ann["a"] = "changed"
	if got := r.Events()[0].Annotations["a"]; got != "b" {
		t.Errorf(`Annotations["a"] = %q, want "b"`, got)
	}
}

// TestZeroValueAndWithLogger checks that a zero Recorder records, at the
// system clock's time, and that WithLogger's recorder keeps with it.
func TestZeroValueAndWithLogger(t *testing.T) {
	var r recordtest.Recorder
	before := time.Now()
	var rec record.EventRecorderLogger = &r
	rec.Event(pod, v1.EventTypeNormal, "A", "m")
	rec.WithLogger(klog.Background()).Event(pod, v1.EventTypeNormal, "B", "m")
	got := r.Events()
	if len(got) != 2 || got[0].Reason != "A" || got[1].Reason != "B" {
		t.Fatalf("Events() = %v, want A then B", got)
	}
	if got[0].Time.Before(before) || got[0].Time.After(time.Now()) {
		t.Errorf("Time = %v, want the system clock's, after %v", got[0].Time, before)
	}
}

// TestOptionsScheme checks that Options.Scheme finds the kind of an object
// the default scheme does not know.
func TestOptionsScheme(t *testing.T) {
	s := runtime.NewScheme()
	gv := v1.SchemeGroupVersion.WithKind("Widget")
	s.AddKnownTypeWithName(gv, &widget{})
	r := recordtest.New(recordtest.Options{Scheme: s, Clock: clocktesting.NewFakeClock(t0)})
	r.Event(&widget{ObjectMeta: metav1.ObjectMeta{Name: "w"}}, v1.EventTypeNormal, "R", "m")
	checkOne(t, r, recordtest.Event{Object: v1.ObjectReference{Kind: "Widget", APIVersion: "v1", Name: "w"},
		Type: "Normal", Reason: "R", Message: "m"}, "")
}

// TestTypedNilObjectKeptWithReferenceError: a typed-nil object does not panic; each
// call is kept with the reference error client-go would log.
func TestTypedNilObjectKeptWithReferenceError(t *testing.T) {
	r := recordtest.New(recordtest.Options{})
	var pod *v1.Pod
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("Event on a typed-nil *v1.Pod panicked: %v", p)
			}
		}()
		r.Event(pod, v1.EventTypeNormal, "Synced", "ok")
		r.Eventf(pod, v1.EventTypeNormal, "Synced", "%d", 1)
		r.EventsRecorder().Eventf(pod, pod, v1.EventTypeNormal, "Synced", "Sync", "x")
	}()
	for _, e := range r.Events() {
		if !strings.Contains(e.Err, "Could not construct reference") {
			t.Errorf("event for a typed-nil object kept without the reference error: %v", e)
		}
	}
}
