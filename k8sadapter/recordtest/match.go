package recordtest

import (
	"fmt"
	"strings"
)

// Match describes the events a test expects. Each field left at its zero
// value matches anything, but Err: a Match with no Err matches only events
// that client-go would have reported, so that a test expecting an event
// fails when the real recorder would have dropped it.
type Match struct {
	// Kind, Namespace and Name are the object's (Event.Object).
	Kind, Namespace, Name string
	// Type, Reason and Action are the event's.
	Type, Reason, Action string
	// Message is the whole message; MessageContains a part of it.
	Message, MessageContains string
	// Annotations must each be among the event's, with the same value.
	Annotations map[string]string
	// Count is the event's count; 0 matches any.
	Count int32
	// Err must be part of the event's Err; empty matches only events
	// without one.
	Err string
}

// Matches reports whether e is an event m describes. Its method value
// fits WaitFor: r.WaitFor(ctx, recordtest.Match{Reason: "Failed"}.Matches).
func (m Match) Matches(e Event) bool {
	return m.matchesObject(&e) && m.matchesEvent(&e) && m.matchesAnnotations(&e) &&
		(m.Err == "" && e.Err == "" || m.Err != "" && strings.Contains(e.Err, m.Err))
}

// matchesObject reports whether e's object is m's.
func (m *Match) matchesObject(e *Event) bool {
	return is(m.Kind, e.Object.Kind) && is(m.Namespace, e.Object.Namespace) && is(m.Name, e.Object.Name)
}

// matchesEvent reports whether e's type, reason, action, message and
// count are m's.
func (m *Match) matchesEvent(e *Event) bool {
	return is(m.Type, e.Type) && is(m.Reason, e.Reason) && is(m.Action, e.Action) &&
		is(m.Message, e.Message) && strings.Contains(e.Message, m.MessageContains) &&
		(m.Count == 0 || m.Count == e.Count)
}

// matchesAnnotations reports whether e has each of m's annotations.
func (m *Match) matchesAnnotations(e *Event) bool {
	for k, v := range m.Annotations {
		if got, ok := e.Annotations[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// is reports whether got is want, or want is empty.
func is(want, got string) bool { return want == "" || want == got }

// String formats m as a Go literal of the fields it sets.
func (m Match) String() string {
	var fields []string
	add := func(name, v string) {
		if v != "" {
			fields = append(fields, fmt.Sprintf("%s: %q", name, v))
		}
	}
	add("Kind", m.Kind)
	add("Namespace", m.Namespace)
	add("Name", m.Name)
	add("Type", m.Type)
	add("Reason", m.Reason)
	add("Action", m.Action)
	add("Message", m.Message)
	add("MessageContains", m.MessageContains)
	if len(m.Annotations) > 0 {
		fields = append(fields, fmt.Sprintf("Annotations: %v", m.Annotations))
	}
	if m.Count != 0 {
		fields = append(fields, fmt.Sprintf("Count: %d", m.Count))
	}
	add("Err", m.Err)
	return "Match{" + strings.Join(fields, ", ") + "}"
}
