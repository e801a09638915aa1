package recordtest

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Event is one event a Recorder kept: a call to one of its recorders or,
// with Options.Correlate, what a sink would have stored for the calls it
// folded. Events are plain values; compare them with == on fields, or
// with go-cmp.
type Event struct {
	// Object is the object the event is about (core/v1's involvedObject,
	// the events API's regarding), as client-go's
	// tools/reference.GetReference builds it from the object and the
	// scheme: kind, API version, namespace, name, UID, resource version,
	// and the field path of a reference passed in. It is empty when
	// there is no reference (see Err).
	Object v1.ObjectReference
	// Related is the events API's related object, nil when none was given
	// or it has no reference (client-go then leaves it out). Always nil
	// for core/v1 events.
	Related *v1.ObjectReference
	// Type is the event type: v1.EventTypeNormal or v1.EventTypeWarning
	// (or what was given; see Err).
	Type string
	// Reason is the reason given.
	Reason string
	// Action is the events API's action; empty for core/v1 events.
	Action string
	// Message is the message, or the events API's note, formatted with
	// its arguments. With Options.Correlate, it is the latest message of
	// a folded event, as a sink's patch leaves it, and a combined event's
	// begins with "(combined from similar events): ".
	Message string
	// Annotations are AnnotatedEventf's annotations (a copy), nil for the
	// other calls and for combined events (client-go drops them).
	Annotations map[string]string
	// FirstTime is when the event was first recorded, and Time when it was
	// last: both the clock's reading at the call, unless repeats were
	// folded into the event.
	FirstTime, Time time.Time
	// Count is how many calls the event stands for: 1, unless repeats
	// were folded into it (Options.Correlate); for a combined event, how
	// many times the group was combined, as client-go counts it.
	Count int32
	// Err, when not empty, says why client-go's recorder would not have
	// reported the event, as it logs it: "Could not construct reference,
	// will not report event: …" (a nil object, or one whose kind the
	// scheme does not know) or `Unsupported event type: "…"`. The event is
	// kept anyway so that a test sees it, is never correlated, and matches
	// a Match only if the Match asks for the error.
	Err string
}

// String formats e on one line, as the failure messages of the Expect
// helpers list events: type, reason, action, object, count, message,
// annotations and error, each when set.
func (e Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", e.Type, e.Reason)
	if e.Action != "" {
		fmt.Fprintf(&b, " action=%s", e.Action)
	}
	fmt.Fprintf(&b, " %s", objectString(&e.Object))
	if e.Related != nil {
		fmt.Fprintf(&b, " related=%s", objectString(e.Related))
	}
	if e.Count != 1 {
		fmt.Fprintf(&b, " count=%d", e.Count)
	}
	fmt.Fprintf(&b, ": %q", e.Message)
	if len(e.Annotations) > 0 {
		fmt.Fprintf(&b, " annotations=%v", e.Annotations)
	}
	if e.Err != "" {
		fmt.Fprintf(&b, " err=%q", e.Err)
	}
	return b.String()
}

// objectString names a referenced object as "Kind namespace/name", or
// "(no object)".
func objectString(r *v1.ObjectReference) string {
	if r.Kind == "" && r.Name == "" {
		return "(no object)"
	}
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}
