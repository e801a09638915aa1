package events

import (
	"fmt"
	"maps"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientevents "k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/k8sadapter/internal/kube"
)

// Compile-time proof that a Recorder is what client-go's NewRecorder
// returns.
var _ clientevents.EventRecorderLogger = (*Recorder)(nil)

// Recorder records events.k8s.io/v1 events for one reporting controller.
// Eventf never blocks, never panics and never starts a goroutine
// (client-go's starts one per event): the event is queued, or refused,
// counted and logged (a refusal for a full queue or after Shutdown once
// per burst, with a count). It is safe for concurrent use. Its zero value
// is not usable: get one from EventBroadcaster.NewRecorder.
type Recorder struct {
	e                    *EventBroadcaster
	scheme               *runtime.Scheme
	controller, instance string
	logger               klog.Logger
}

// Eventf records an event about regarding (and optionally related): its
// type (Normal or Warning), reason, action and note, formatted with args.
func (r *Recorder) Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	r.eventf(regarding, related, nil, eventtype, reason, action, note, args...)
}

// AnnotatedEventf is Eventf with annotations on the event (client-go's
// AnnotatedEventRecorder, from v0.37). The map is copied. Annotations are
// not part of what makes events a series.
func (r *Recorder) AnnotatedEventf(regarding runtime.Object, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...interface{}) {
	r.eventf(regarding, related, annotations, eventtype, reason, action, note, args...)
}

func (r *Recorder) eventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...interface{}) {
	e := r.e
	clk := e.cfg.clock
	timestamp := metav1.MicroTime{Time: clk.Now()}
	message := fmt.Sprintf(note, args...)
	refRegarding := e.p.Accept(r.logger, r.scheme, regarding, eventtype, reason, message)
	if refRegarding == nil {
		return
	}
	var refRelated *v1.ObjectReference
	if related != nil {
		var err error
		if refRelated, err = kube.Reference(r.scheme, related); err != nil {
			r.logger.V(9).Info("Could not construct reference", "object", related, "err", err)
		}
	}
	if e.wr.foldUnbuilt(refRegarding, refRelated, eventtype, reason, action, r.controller, r.instance, timestamp) {
		return // a repeat of a series waiting for the writer: nothing to build
	}
	namespace := refRegarding.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	event := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:        kube.EventName(refRegarding.Name, e.p.Stamp(clk.Now()).UnixNano()),
			Namespace:   namespace,
			Annotations: maps.Clone(annotations), // only for an event built: not for one refused or folded
		},
		EventTime:           timestamp,
		ReportingController: r.controller,
		ReportingInstance:   r.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *refRegarding,
		Related:             refRelated,
		Note:                message,
		Type:                eventtype,
	}
	e.p.Publish(r.logger, event)
}

// WithLogger returns a recorder that logs its failures to logger.
func (r *Recorder) WithLogger(logger klog.Logger) clientevents.EventRecorderLogger {
	c := *r
	c.logger = logger
	return &c
}
