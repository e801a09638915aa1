package recordtest

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Options configures a Recorder. The zero value is ready to use: client-go's
// scheme, the system clock, every call kept as it was made.
type Options struct {
	// Scheme finds the kind and API version of objects whose TypeMeta is
	// empty, as in client-go's recorders. Nil means client-go's
	// kubernetes/scheme.Scheme, which knows every built-in type.
	Scheme *runtime.Scheme

	// Clock stamps the events. Nil means CorrelatorOptions.Clock if it is
	// set, or else the system clock. With Correlate, the correlator reads
	// it too.
	Clock clock.PassiveClock

	// IncludeObject adds " involvedObject{kind=…,apiVersion=…}" to the
	// lines Strings returns, as record.FakeRecorder.IncludeObject does.
	IncludeObject bool

	// Correlate runs each core/v1 event through herald's correlator
	// (k8sadapter.EventCorrelator) as a broadcaster's sink does, and keeps
	// what the sink would store: repeats folded into one event with a
	// count, similar events combined, spam skipped (see Recorder.Skipped).
	// Without it, every call is kept as an event of its own. Calls through
	// EventsRecorder are always kept one by one.
	Correlate bool

	// CorrelatorOptions configures the correlator when Correlate is set,
	// as record.CorrelatorOptions configures client-go's: zero fields
	// mean client-go's defaults. Its Clock is used only when Clock is nil.
	// Its functions run under the Recorder's lock: they must not call the
	// Recorder.
	CorrelatorOptions record.CorrelatorOptions
}

// scheme returns the scheme that builds references.
func (o *Options) scheme() *runtime.Scheme {
	if o.Scheme != nil {
		return o.Scheme
	}
	return scheme.Scheme
}

// clock returns the clock that stamps events.
func (o *Options) clock() clock.PassiveClock {
	switch {
	case o.Clock != nil:
		return o.Clock
	case o.CorrelatorOptions.Clock != nil:
		return o.CorrelatorOptions.Clock
	}
	return clock.RealClock{}
}
