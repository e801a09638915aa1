package recordtest_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"

	"github.com/heraldgo/herald/k8sadapter/recordtest"
)

// fakeCalls are calls that show every part of FakeRecorder's line: a
// formatted message, a '%' in a plain message, a verb in the reason (part
// of FakeRecorder's format), TypeMeta or none, annotations or none, an
// event type client-go would refuse.
var fakeCalls = []func(r record.EventRecorder){
	func(r record.EventRecorder) { r.Event(pod, v1.EventTypeNormal, "Started", "100% done") },
	func(r record.EventRecorder) { r.Eventf(pod, v1.EventTypeWarning, "Failed", "pull %q: %d", "app", 3) },
	func(r record.EventRecorder) { r.Eventf(pod, v1.EventTypeWarning, "Odd%s", "message %s", "x") },
	func(r record.EventRecorder) {
		r.AnnotatedEventf(pod, map[string]string{"b": "2", "a": "1"}, v1.EventTypeNormal, "Synced", "gen %d", 2)
	},
	func(r record.EventRecorder) {
		r.AnnotatedEventf(pod, map[string]string{}, v1.EventTypeNormal, "Synced", "none")
	},
	func(r record.EventRecorder) {
		r.Event(&v1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}}, v1.EventTypeNormal, "Typed", "m")
	},
	func(r record.EventRecorder) {
		r.Event(&v1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Deployment", APIVersion: "apps/v1"}}, v1.EventTypeNormal, "Typed", "m")
	},
	func(r record.EventRecorder) { r.Event(node, "Bogus", "Type", "m") },
}

// TestStringsMatchFakeRecorder makes the same calls on client-go's
// FakeRecorder and on a Recorder, with and without IncludeObject, and
// requires Strings to be the lines FakeRecorder sent.
func TestStringsMatchFakeRecorder(t *testing.T) {
	for _, include := range []bool{false, true} {
		fake := record.NewFakeRecorder(len(fakeCalls))
		fake.IncludeObject = include
		r := recordtest.New(recordtest.Options{IncludeObject: include, Correlate: true})
		for _, call := range fakeCalls {
			call(fake)
			call(r)
		}
		close(fake.Events)
		var want []string
		for line := range fake.Events {
			want = append(want, line)
		}
		if d := cmp.Diff(want, r.Strings()); d != "" {
			t.Errorf("IncludeObject %v: Strings() differs from FakeRecorder's lines (-FakeRecorder +Strings):\n%s", include, d)
		}
	}
}

// TestEventsStringsMatchFakeRecorder does the same for tools/events'
// FakeRecorder.
func TestEventsStringsMatchFakeRecorder(t *testing.T) {
	calls := []func(r events.EventRecorder){
		func(r events.EventRecorder) {
			r.Eventf(pod, node, v1.EventTypeNormal, "Scheduled", "Binding", "to %s", "node-1")
		},
		func(r events.EventRecorder) { r.Eventf(pod, nil, v1.EventTypeWarning, "Odd%d", "Pull", "n %d", 1) },
		func(r events.EventRecorder) { r.Eventf(nil, nil, v1.EventTypeWarning, "NoObject", "Pull", "n") },
	}
	fake := events.NewFakeRecorder(len(calls))
	r := recordtest.New(recordtest.Options{IncludeObject: true}) // the events API's lines have no object
	for _, call := range calls {
		call(fake)
		call(r.EventsRecorder())
	}
	close(fake.Events)
	var want []string
	for line := range fake.Events {
		want = append(want, line)
	}
	if d := cmp.Diff(want, r.Strings()); d != "" {
		t.Errorf("Strings() differs from FakeRecorder's lines (-FakeRecorder +Strings):\n%s", d)
	}
}

// TestStringsNilObject checks the one call where FakeRecorder panics (a
// nil object with IncludeObject): Strings has an empty kind and version.
func TestStringsNilObject(t *testing.T) {
	r := recordtest.New(recordtest.Options{IncludeObject: true})
	r.Event(nil, v1.EventTypeNormal, "R", "m")
	r.Event((*v1.Pod)(nil), v1.EventTypeNormal, "R", "m")
	want := []string{"Normal R m involvedObject{kind=,apiVersion=}", "Normal R m involvedObject{kind=,apiVersion=}"}
	if d := cmp.Diff(want, r.Strings()); d != "" {
		t.Errorf("Strings() (-want +got):\n%s", d)
	}
}
