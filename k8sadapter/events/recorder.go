package events

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientevents "k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/internal/kube"
)

// Compile-time proof that a Recorder is what client-go's NewRecorder
// returns.
var _ clientevents.EventRecorderLogger = (*Recorder)(nil)

// Recorder records events.k8s.io/v1 events for one reporting controller.
// Eventf never blocks and never starts a goroutine (client-go's starts one
// per event): the event is queued, or refused, logged and counted. It is
// safe for concurrent use. Its zero value is not usable: get one from
// EventBroadcaster.NewRecorder.
type Recorder struct {
	e                    *EventBroadcaster
	scheme               *runtime.Scheme
	controller, instance string
	logger               klog.Logger
}

// Eventf records an event about regarding (and optionally related): its
// type (Normal or Warning), reason, action and note, formatted with args.
func (r *Recorder) Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	e := r.e
	e.recorded.Add(1)
	clk := e.cfg.clock
	timestamp := metav1.MicroTime{Time: clk.Now()}
	message := fmt.Sprintf(note, args...)
	refRegarding, err := kube.Reference(r.scheme, regarding)
	if err != nil {
		e.invalidObject.Add(1)
		r.logger.Error(err, "Could not construct reference, will not report event", "object", regarding, "eventType", eventtype, "reason", reason, "message", message)
		return
	}
	var refRelated *v1.ObjectReference
	if related != nil {
		if refRelated, err = kube.Reference(r.scheme, related); err != nil {
			r.logger.V(9).Info("Could not construct reference", "object", related, "err", err)
		}
	}
	if !util.ValidateEventType(eventtype) {
		e.invalidType.Add(1)
		r.logger.Error(nil, "Unsupported event type", "eventType", eventtype)
		return
	}
	namespace := refRegarding.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	event := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      util.GenerateEventName(refRegarding.Name, clk.Now().UnixNano()),
			Namespace: namespace,
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
	sent, err := e.b.TryPublish(event)
	switch {
	case err != nil:
		e.droppedClosed.Add(1)
		r.logger.Error(err, "Unable to record event (will not retry!)")
	case !sent:
		e.droppedFull.Add(1)
		r.logger.Error(nil, "Unable to record event: too many queued events, dropped event", "event", klog.KObj(event))
	}
}

// WithLogger returns a recorder that logs its failures to logger.
func (r *Recorder) WithLogger(logger klog.Logger) clientevents.EventRecorderLogger {
	c := *r
	c.logger = logger
	return &c
}
