package k8sadapter

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// FuzzOccurrence checks that a folded event rebuilt from its time is the
// event the recorder built, and that the fold rule takes an event for a
// repeat only if it is that.
func FuzzOccurrence(f *testing.F) {
	f.Add("web-0", "BackOff", "Back-off", int64(1735787105987654321), int64(1000), "k", "v")
	f.Add("a", "R", "", int64(0), int64(1), "", "")
	f.Fuzz(func(t *testing.T, name, reason, message string, nanos, step int64, ak, av string) {
		ref := &v1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: name, UID: "u", APIVersion: "v1"}
		var ann map[string]string
		if ak != "" {
			ann = map[string]string{ak: av}
		}
		source := v1.EventSource{Component: "c", Host: "h"}
		build := func(at time.Time) *v1.Event {
			e := makeEvent(ref, ann, at, v1.EventTypeNormal, reason, message)
			e.Source, e.ReportingController, e.ReportingInstance = source, source.Component, source.Host
			return e
		}
		first, at := build(time.Unix(0, nanos)), time.Unix(0, nanos+step)
		next := build(at)
		a := adapter{folds: true}
		h, ok := a.FoldKey(next)
		if !ok {
			return // a random name: never folds
		}
		if b0, ok := a.FoldKey(first); ok && b0 != h {
			t.Fatalf("two events of one object and type in two buckets")
		}
		w := &waiting{First: first}
		if !a.Fold(w, next) {
			return // the first's own name is random
		}
		got := new(v1.Event)
		occurrence(got, first, w.Data.times[0])
		generateName(got) // as the correlator names an occurrence it keeps
		if got.Name != next.Name || !got.FirstTimestamp.Equal(&next.FirstTimestamp) || !got.LastTimestamp.Equal(&next.LastTimestamp) {
			t.Fatalf("rebuilt %s at %v, recorded %s at %v", got.Name, got.LastTimestamp, next.Name, next.LastTimestamp)
		}
		other := build(at)
		other.Message += "x"
		if a.Fold(w, other) {
			t.Fatal("an event with another message folded")
		}
		other = build(at)
		other.Annotations = map[string]string{ak + "x": av}
		if a.Fold(w, other) {
			t.Fatal("an event with other annotations folded")
		}
		other = build(at)
		other.InvolvedObject.ResourceVersion = "2"
		if a.Fold(w, other) {
			t.Fatal("an event about another resource version folded")
		}
	})
}
