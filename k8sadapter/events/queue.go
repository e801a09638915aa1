package events

import (
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldgo/herald/k8sadapter/internal/pipeline"
)

// key is client-go's isomorphism key: events equal in these fields form a
// series; the note is not part of it.
type key struct {
	eventType, action, reason              string
	reportingController, reportingInstance string
	regarding, related                     corev1.ObjectReference
}

func keyOf(e *eventsv1.Event) key {
	k := key{
		eventType: e.Type, action: e.Action, reason: e.Reason,
		reportingController: e.ReportingController, reportingInstance: e.ReportingInstance,
		regarding: e.Regarding,
	}
	if e.Related != nil {
		k.related = *e.Related
	}
	return k
}

// pending is an entry of the writer's queue: the first event of a series
// waiting for the writer, and the isomorphic events folded into it.
type pending = pipeline.Entry[*eventsv1.Event, key, folded]

// folded is what an entry keeps of the events folded into it: the time of
// the newest.
type folded struct{ last metav1.MicroTime }

// FoldKey is pipeline.Folding's: every event may fold, into the event of
// its series. (A map keyed by the struct hashes it without allocating;
// maphash.Comparable makes its argument escape, and would cost the
// recorder an allocation per event.)
func (adapter) FoldKey(ev *eventsv1.Event) (key, bool) { return keyOf(ev), true }

// ResetEntry is pipeline.Folding's.
func (adapter) ResetEntry(f *folded) { *f = folded{} }

// Fold is pipeline.Folding's: it folds ev into w, the event of its series
// waiting for the writer: it adds no more than its count and time
// (client-go keeps nothing else of a series' later events either). It
// runs under the queue's lock, on the recording goroutine, and allocates
// nothing.
func (adapter) Fold(w *pending, ev *eventsv1.Event) bool {
	w.Data.last = ev.EventTime
	return true
}

// foldUnbuilt folds an event that the recorder has not built yet into the
// event of its series waiting for the writer, if there is one and no
// handler is owed the event itself, and reports whether it did: building
// the event (its name, its copy of every field) would be wasted.
func (wr *writer) foldUnbuilt(regarding, related *corev1.ObjectReference, eventType, reason, action, controller, instance string, at metav1.MicroTime) bool {
	k := key{
		eventType: eventType, action: action, reason: reason,
		reportingController: controller, reportingInstance: instance,
		regarding: *regarding,
	}
	if related != nil {
		k.related = *related
	}
	return wr.e.p.PublishFolded(k, func(w *pending) bool {
		w.Data.last = at
		return true
	})
}
