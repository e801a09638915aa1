package recordtest

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
)

// EventsRecorder is an events.EventRecorderLogger (client-go's tools/events,
// the events.k8s.io API) that keeps what it records in the Recorder it
// came from, beside the core/v1 events: a controller that uses both APIs
// is checked in one place. Every call is kept as an event of its own, with
// count 1: client-go folds repeats of the events API into series in its
// broadcaster, over minutes, and the kit does not imitate that.
//
// Get one from Recorder.EventsRecorder; the zero value is not usable. It
// is safe for concurrent use.
type EventsRecorder struct {
	r *Recorder
}

var _ events.EventRecorderLogger = (*EventsRecorder)(nil)

// EventsRecorder returns a recorder for the events.k8s.io API that keeps
// its events in r.
func (r *Recorder) EventsRecorder() *EventsRecorder { return &EventsRecorder{r: r} }

// Eventf records an event about regarding, and related if it is not nil,
// as client-go's events recorder does: the note is formatted by
// fmt.Sprintf; a related object with no reference is left out (Related is
// nil), as client-go leaves it.
func (er *EventsRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r := er.r
	e := Event{Type: eventtype, Reason: reason, Action: action, Message: fmt.Sprintf(note, args...), Count: 1}
	e.Object, e.Err = reference(&r.opts, regarding)
	if related != nil {
		if ref, err := reference(&r.opts, related); err == "" {
			e.Related = &ref
		}
	}
	if e.Err == "" && !validType(eventtype) {
		e.Err = fmt.Sprintf("Unsupported event type: %q", eventtype)
	}
	line := fmt.Sprintf(eventtype+" "+reason+" "+note, args...) // tools/events' FakeRecorder line

	r.mu.Lock()
	defer r.mu.Unlock()
	e.FirstTime = r.opts.clock().Now()
	e.Time = e.FirstTime
	r.strs = append(r.strs, line)
	r.events = append(r.events, e)
	r.changedLocked(len(r.events) - 1)
}

// WithLogger returns er: what is recorded through the result is kept with
// the rest.
func (er *EventsRecorder) WithLogger(klog.Logger) events.EventRecorderLogger { return er }
