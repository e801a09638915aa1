package recordtest

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldgo/herald/k8sadapter"
)

// correlated is Options.Correlate's sink: herald's correlator and what it
// would have stored, standing in for the apiserver. It is guarded by the
// Recorder's lock.
type correlated struct {
	c *k8sadapter.EventCorrelator
	// stored finds a kept event by what a patch names: the name, and the
	// type and reason, which tell apart two combined events about one
	// object at one instant (their names are the same).
	stored map[storedKey]int
	seq    uint64 // names the events the Recorder builds
}

// storedKey is what identifies a stored event to a patch.
type storedKey struct{ name, typ, reason string }

// newCorrelated returns a sink with a correlator configured from o.
func newCorrelated(o *Options) *correlated {
	co := o.CorrelatorOptions
	co.Clock = o.clock()
	return &correlated{c: k8sadapter.NewEventCorrelatorWithOptions(co), stored: make(map[storedKey]int)}
}

// correlateLocked runs the event of one call through the correlator and
// keeps what the sink of a broadcaster would have stored, as client-go's
// sink writes it: nothing when the spam filter skips it, a patch of the
// count, time and message of the stored event a repeat names, a new event
// otherwise (also when the patched event is not stored: the server's 404,
// after which client-go creates it). What was stored is fed back, as the
// server's answer is.
func (r *Recorder) correlateLocked(e *Event) {
	s := r.corr
	// A name of the Recorder's own: "<object>.recordtest.<n>" is never
	// one of the correlator's "<object>.<hex nanoseconds>" (combined
	// events), so that no two events stored share one, as they would
	// with a clock that stands still.
	s.seq++
	in := coreEvent(e, e.Object.Name+".recordtest."+strconv.FormatUint(s.seq, 10))
	res, _ := s.c.EventCorrelate(in) // an error (a panicking option function) still has a result
	if res.Skip {
		r.skipped++
		return
	}
	out := res.Event
	k := storedKey{out.Name, out.Type, out.Reason}
	i, ok := s.stored[k]
	if ok && out.Count > 1 {
		kept := &r.events[i]
		kept.Count, kept.Time, kept.Message = out.Count, out.LastTimestamp.Time, out.Message
	} else {
		out.ResourceVersion = "" // a create, as client-go's sink makes it
		i = len(r.events)
		s.stored[k] = i
		r.events = append(r.events, storedEvent(out))
	}
	s.c.UpdateState(out)
	r.changedLocked(i)
}

// coreEvent is the core/v1 event client-go's recorder builds for e's call.
func coreEvent(e *Event, name string) *v1.Event {
	ns := e.Object.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	t := metav1.NewTime(e.Time)
	return &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: e.Annotations},
		InvolvedObject: e.Object,
		Reason:         e.Reason,
		Message:        e.Message,
		Type:           e.Type,
		FirstTimestamp: t,
		LastTimestamp:  t,
		Count:          1,
	}
}

// storedEvent is the Event kept for a core/v1 event stored.
func storedEvent(ev *v1.Event) Event {
	return Event{
		Object:      ev.InvolvedObject,
		Type:        ev.Type,
		Reason:      ev.Reason,
		Message:     ev.Message,
		Annotations: ev.Annotations,
		FirstTime:   ev.FirstTimestamp.Time,
		Time:        ev.LastTimestamp.Time,
		Count:       ev.Count,
	}
}
