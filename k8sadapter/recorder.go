package k8sadapter

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/k8sadapter/internal/kube"
)

// Compile-time proof that a Recorder is what client-go's NewRecorder returns.
var _ record.EventRecorderLogger = (*Recorder)(nil)

// Recorder records events about objects on behalf of one event source, as
// client-go's recorder does, into its EventBroadcaster. Its methods never
// block, never panic and never start a goroutine; they return once the
// event is queued, or counted and logged as refused (a refusal for a full
// queue or after Shutdown is logged once per burst, with a count). Get one
// from EventBroadcaster.NewRecorder; it is safe for concurrent use. Its
// zero value is not usable.
type Recorder struct {
	e      *EventBroadcaster
	scheme *runtime.Scheme
	source v1.EventSource
	logger klog.Logger
}

// Event records an event about object (any object the scheme knows, or a
// non-nil *v1.ObjectReference) of type Normal or Warning. Any other object
// or type is refused, counted in Stats.InvalidObject or InvalidType, and
// logged.
func (r *Recorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.generate(object, nil, time.Time{}, eventtype, reason, message)
}

// Eventf is Event with a message formatted by fmt.Sprintf.
func (r *Recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	r.generate(object, nil, time.Time{}, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// AnnotatedEventf is Eventf with annotations set on the event (the map is
// used as given, not copied).
func (r *Recorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...interface{}) {
	r.generate(object, annotations, time.Time{}, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// PastEventf is Eventf for something that happened at timestamp: the event's
// first and last timestamps, and its name, use timestamp instead of the
// clock. client-go had this method and removed it because it ignored the
// timestamp; this one honours it. NewRecorder returns client-go's
// interface, which lacks it: reach it with a type assertion,
// rec.(*k8sadapter.Recorder).PastEventf(…).
func (r *Recorder) PastEventf(object runtime.Object, timestamp metav1.Time, eventtype, reason, messageFmt string, args ...interface{}) {
	t := timestamp.Time
	if t.IsZero() {
		t = r.e.cfg.clock.Now()
	}
	r.generate(object, nil, t, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// WithLogger returns a recorder that logs its failures to logger.
func (r *Recorder) WithLogger(logger klog.Logger) record.EventRecorderLogger {
	c := *r
	c.logger = logger
	return &c
}

// generate builds the event as client-go's recorder does and queues it.
// Nothing it is given can make it panic or block.
func (r *Recorder) generate(object runtime.Object, annotations map[string]string, at time.Time, eventtype, reason, message string) {
	e := r.e
	ref := e.p.Accept(r.logger, r.scheme, object, eventtype, reason, message)
	if ref == nil {
		return
	}
	if at.IsZero() {
		at = e.cfg.clock.Now()
	}
	at = e.p.Stamp(at) // one name per event, however still the clock
	if e.foldUnbuilt(ref, annotations, at, eventtype, reason, message, r.source) {
		return // a repeat of the event waiting at the sink: nothing to build
	}
	ev := makeEvent(ref, annotations, at, eventtype, reason, message)
	ev.Source = r.source
	ev.ReportingInstance = r.source.Host
	ev.ReportingController = r.source.Component
	e.p.Publish(r.logger, ev)
}

// makeEvent is client-go's makeEvent with the time given.
func makeEvent(ref *v1.ObjectReference, annotations map[string]string, at time.Time, eventtype, reason, message string) *v1.Event {
	t := metav1.Time{Time: at}
	namespace := ref.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	return &v1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:        kube.EventName(ref.Name, t.UnixNano()),
			Namespace:   namespace,
			Annotations: annotations,
		},
		InvolvedObject: *ref,
		Reason:         reason,
		Message:        message,
		FirstTimestamp: t,
		LastTimestamp:  t,
		Count:          1,
		Type:           eventtype,
	}
}
