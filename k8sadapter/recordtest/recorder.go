package recordtest

import (
	"fmt"
	"maps"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/k8sadapter/internal/kube"
)

// Recorder is a record.EventRecorderLogger for tests that keeps every event
// it records as a structured Event, and its EventsRecorder does the same
// for the events.k8s.io API. Tests read what was kept (Events, Strings),
// wait for it (Wait, WaitFor) and assert it (ExpectEvent and the other
// Expect helpers).
//
// The zero value is ready to use, with zero Options. A Recorder is safe for
// concurrent use and starts no goroutine: each call records before it
// returns, and wakes the goroutines waiting in Wait or WaitFor.
type Recorder struct {
	opts Options // set by New, read only

	mu      sync.Mutex
	events  []Event
	strs    []string
	skipped int
	corr    *correlated // Options.Correlate's sink; nil without it
	// For the waiters (see wait.go): the event each change appended or
	// patched, as it was then, the number of Resets, and the channel the
	// next change closes, nil while no one waits.
	changes []Event
	gen     int
	changed chan struct{}
}

var _ record.EventRecorderLogger = (*Recorder)(nil)

// New returns a Recorder configured by opts.
func New(opts Options) *Recorder {
	r := &Recorder{opts: opts}
	if opts.Correlate {
		r.corr = newCorrelated(&r.opts)
	}
	return r
}

// Event records an event about object, as client-go's recorder does.
func (r *Recorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.record(object, nil, eventtype, reason, "%s", message)
}

// Eventf is Event with the message formatted by fmt.Sprintf.
func (r *Recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.record(object, nil, eventtype, reason, messageFmt, args...)
}

// AnnotatedEventf is Eventf with annotations, which the event keeps (a
// copy).
func (r *Recorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.record(object, annotations, eventtype, reason, messageFmt, args...)
}

// WithLogger returns r: a Recorder logs nothing, and what is recorded
// through the result is kept with the rest.
func (r *Recorder) WithLogger(klog.Logger) record.EventRecorderLogger { return r }

// record keeps one core/v1 call. Formatting and the reference are done
// before the lock is taken: they may call the caller's code (String
// methods, the scheme).
func (r *Recorder) record(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	e := Event{
		Type:        eventtype,
		Reason:      reason,
		Message:     fmt.Sprintf(messageFmt, args...),
		Annotations: maps.Clone(annotations),
		Count:       1,
	}
	e.Object, e.Err = reference(&r.opts, object)
	if e.Err == "" && !validType(eventtype) {
		e.Err = fmt.Sprintf("Unsupported event type: %q", eventtype)
	}
	line := fakeLine(&r.opts, object, annotations, eventtype, reason, messageFmt, args...)

	r.mu.Lock()
	defer r.mu.Unlock()
	e.FirstTime = r.opts.clock().Now() // under the lock: times follow the order kept
	e.Time = e.FirstTime
	r.strs = append(r.strs, line)
	if r.corr != nil && e.Err == "" {
		r.correlateLocked(&e)
		return
	}
	r.events = append(r.events, e)
	r.changedLocked(len(r.events) - 1)
}

// reference builds the reference to object as client-go's recorders do,
// or returns the error client-go logs when it cannot (herald's
// kube.Reference also turns a panic of client-go's into an error).
func reference(o *Options, object runtime.Object) (v1.ObjectReference, string) {
	ref, err := kube.Reference(o.scheme(), object)
	if err != nil {
		return v1.ObjectReference{}, "Could not construct reference, will not report event: " + err.Error()
	}
	return *ref, ""
}

// validType reports whether client-go's recorders accept t.
func validType(t string) bool { return t == v1.EventTypeNormal || t == v1.EventTypeWarning }

// Events returns a copy of the events kept, in the order they were first
// recorded.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Skipped returns how many core/v1 calls the correlator's spam filter
// refused since New or Reset (Options.Correlate): a sink would have
// stored nothing for them, and Events leaves them out, though the count
// of a later repeat includes them, as in client-go.
func (r *Recorder) Skipped() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped
}

// Reset forgets every event and line kept, the count of skipped calls,
// and with Options.Correlate what the correlator remembers, as if r were
// new.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events, r.strs, r.skipped = nil, nil, 0
	if r.corr != nil {
		r.corr = newCorrelated(&r.opts)
	}
	r.changes = nil
	r.gen++
	r.wakeLocked()
}
