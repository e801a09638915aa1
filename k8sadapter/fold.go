package k8sadapter

import (
	"maps"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldgo/herald/k8sadapter/internal/kube"
	"github.com/heraldgo/herald/k8sadapter/internal/pipeline"
)

// What folds in a sink's queue, and why the stored events stay client-go's.
//
// client-go's sink takes each event through its correlator (aggregate,
// count, spam filter) and writes what it allows. Its spam filter spends a
// token per event, per source and object, and a written repeat carries the
// time of the last allowed event. So a sink's queue folds an event into
// one already waiting only where that changes nothing the correlator
// decides or the server stores:
//
//   - the event must be a repeat of the newest event waiting in its spam
//     bucket (same source, object and type: what the default spam key
//     holds, and every field of the default aggregation key but the
//     reason, and of the event key but the reason and message). The
//     events of a bucket then reach the correlator in the order they were
//     recorded, and every decision about them (tokens, counts, groups of
//     similar events) reads only the state of that bucket, which no event
//     of another bucket touches;
//   - it must be identical to the waiting event but for its name and
//     timestamps, which the recorder derives from its time: the entry
//     keeps that time, and the sink rebuilds the event from it;
//   - the sink's correlator must use the default key functions: a
//     CorrelatorOptions KeyFunc or SpamKeyFunc may group events across
//     buckets (nothing folds then).
//
// The sink then hands the correlator every folded event, in order, as an
// event of its own: the filter spends one token each, and each allowed one
// has its own count and time. What it saves is writes: of consecutive
// patches of the same event (the correlator's results for the repeats
// of an entry), only the last is sent, carrying the count and time of the
// last allowed repeat, which the server would have held after the others
// anyway (a patch sets count, lastTimestamp and message; it adds nothing).
//
// Where the outcome can still differ from client-go's: the correlator's
// caches are LRUs, and events of different buckets reach them in another
// order than recorded (a folded event is handled with its entry, before
// events of other buckets recorded earlier). Which key a full cache
// forgets first can differ then; with the default 4096 entries per cache,
// that takes a burst of over 4096 distinct keys, where client-go itself
// forgets keys and starts a second event for a repeat.

// maxFolded bounds the repeats one waiting event holds, so that a sink's
// queue stays within its length times this many timestamps; a longer run
// of repeats takes another entry.
const maxFolded = 64

// occurrences is what a waiting event keeps of the repeats folded into
// it: the time of each, in order.
type occurrences struct{ times []time.Time }

// waiting is an entry of a sink's queue.
type waiting = pipeline.Entry[*v1.Event, bucket, occurrences]

// bucket is the spam key of client-go's default SpamKeyFunc, as a
// comparable struct.
type bucket struct {
	component, host                        string
	kind, namespace, name, uid, apiVersion string
	eventType                              string
}

// FoldKey is pipeline.Folding's: it keys an event by its spam bucket.
// Only events whose name and timestamps the recorder derived from their
// time may fold, and none with a custom key function.
func (a adapter) FoldKey(e *v1.Event) (bucket, bool) {
	o := &e.InvolvedObject
	if !a.folds || e.FirstTimestamp != e.LastTimestamp || !kube.IsGeneratedName(e.Name, o.Name, e.FirstTimestamp.UnixNano()) {
		return bucket{}, false
	}
	return bucketKey(e.Source, o, e.Type), true
}

// ResetEntry is pipeline.Folding's: an entry handed back keeps its
// slice of times, emptied.
func (adapter) ResetEntry(o *occurrences) { o.times = o.times[:0] }

// bucketKey is the spam bucket of events of the source about the object,
// of the type.
func bucketKey(source v1.EventSource, o *v1.ObjectReference, eventType string) bucket {
	return bucket{
		component: source.Component, host: source.Host,
		kind: o.Kind, namespace: o.Namespace, name: o.Name, uid: string(o.UID), apiVersion: o.APIVersion,
		eventType: eventType,
	}
}

// Fold is pipeline.Folding's: it folds e into w, the newest event
// waiting in e's spam bucket, if e repeats w's first event and w has
// room. It runs under the queue's lock, on the recording goroutine:
// comparisons and, once an entry's slice has grown, no allocation.
func (adapter) Fold(w *waiting, e *v1.Event) bool {
	first := w.First
	if len(w.Data.times) >= maxFolded || e.Namespace != first.Namespace || e.Count != first.Count ||
		e.ReportingController != first.ReportingController || e.ReportingInstance != first.ReportingInstance ||
		!repeats(first, &e.InvolvedObject, e.Annotations, e.Type, e.Reason, e.Message, e.Source) {
		return false
	}
	w.Data.times = append(w.Data.times, e.LastTimestamp.Time)
	return true
}

// repeats reports whether the recorder, given these, builds first again,
// but for the name and timestamps. The recorder sets no other fields.
func repeats(first *v1.Event, ref *v1.ObjectReference, annotations map[string]string, eventType, reason, message string, source v1.EventSource) bool {
	return message == first.Message && reason == first.Reason && eventType == first.Type &&
		*ref == first.InvolvedObject && source == first.Source &&
		(annotations == nil) == (first.Annotations == nil) && maps.Equal(annotations, first.Annotations)
}

// foldUnbuilt folds an event that the recorder has not built yet into the
// event it repeats, waiting in the queue of the one sink started, if no
// handler is owed the event itself, and reports whether it did: building
// the event (its name, its copy of every field) would be wasted. The
// event the recorder would build is the first's, at time at: its name is
// generated from the same object name as the first's, at a time that
// makes it a valid name too.
func (e *EventBroadcaster) foldUnbuilt(ref *v1.ObjectReference, annotations map[string]string, at time.Time, eventType, reason, message string, source v1.EventSource) bool {
	nanos := at.UnixNano()
	if nanos < 0 || len(ref.Name)+17 > 253 { // a sign, or too long a name: let FoldKey judge it
		return false
	}
	k := bucketKey(source, ref, eventType)
	return e.p.PublishFolded(k, func(w *waiting) bool {
		first := w.First
		// first.Name is generated from ref.Name: FoldKey let only such an
		// event start an entry, and repeats compares the objects.
		if len(w.Data.times) >= maxFolded || first.Count != 1 ||
			first.ReportingController != source.Component || first.ReportingInstance != source.Host ||
			!repeats(first, ref, annotations, eventType, reason, message, source) {
			return false
		}
		w.Data.times = append(w.Data.times, at)
		return true
	})
}

// occurrence rebuilds in e the event that was folded into first at time
// at, as the recorder built it, but for its name, which is generated from
// at: the correlator generates it if it keeps it (a repeat takes the name
// of the first).
func occurrence(e, first *v1.Event, at time.Time) {
	*e = *first
	t := metav1.Time{Time: at}
	e.Name = ""
	e.FirstTimestamp, e.LastTimestamp = t, t
}
