package k8sadapter

import (
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/k8sadapter/internal/kube"
	"github.com/heraldgo/herald/k8sadapter/internal/pipeline"
)

// sinkWriter writes the events of one queue to one sink, one at a time,
// on that queue's goroutine, with its own correlator. Everything in it
// below q belongs to that goroutine.
type sinkWriter struct {
	e       *EventBroadcaster
	sink    record.EventSink
	corr    *EventCorrelator
	q       *pipeline.Fold[*v1.Event, bucket, occurrences]
	w       *pipeline.Writer[*v1.Event]
	attempt pipeline.Attempt[*v1.Event] // s.write, bound once
	patch   []byte                      // the patch of the event being written
	later   int32                       // repeats counted after it (see held)
	counts  sinkCounts
	scratch [2]v1.Event // rebuilt occurrences (see handle)
}

// aborted reports whether a shutdown's deadline has passed: the sink
// abandons what it holds, and starts no sink call (record.EventSink's
// calls take no context to end).
func (s *sinkWriter) aborted() bool { return s.e.p.Aborting().Err() != nil }

func (e *EventBroadcaster) newSinkWriter(sink record.EventSink) *sinkWriter {
	s := &sinkWriter{
		e:    e,
		sink: sink,
		corr: NewEventCorrelatorWithOptions(e.correlatorOptions()),
		q:    e.p.NewFold(e.cfg.QueueLength),
		w:    e.p.NewWriter(e.cfg.MaxTries, e.timers),
	}
	// A combined event is named from the time the correlator builds it:
	// stamped as the recorder stamps events, it takes no recorded
	// event's name (a clock standing still gives the first event of its
	// object the same time).
	s.corr.stamp = e.p.Stamp
	s.attempt = s.write
	return s
}

// adapter is what the pipeline needs of core/v1 (pipeline.Adapter): how
// events fold in a sink's queue (fold.go), how a sink's counters add up,
// and client-go's rules for a sink's errors and retries.
type adapter struct {
	folds bool          // the default key functions: events may fold (see fold.go)
	sleep time.Duration // WithSleepDuration
}

// newAdapter returns the adapter of a broadcaster configured by cfg.
func newAdapter(cfg config) adapter {
	o := cfg.correlator
	return adapter{folds: o.KeyFunc == nil && o.SpamKeyFunc == nil, sleep: cfg.Sleep}
}

// Pause is client-go's spacing of attempts: the first pause is a random
// fraction of sleep, so that clients do not retry in step after an
// apiserver outage; the others are sleep.
func (a adapter) Pause(failures int) time.Duration {
	if failures == 1 {
		return time.Duration(float64(a.sleep) * rand.Float64())
	}
	return a.sleep
}

// Classify is client-go's recordEvent classification: every StatusError
// is final; AlreadyExists and a terminating namespace are expected, and
// logged at V(5). 403 Forbidden is a class of its own (pipeline.ClassOf),
// counted in FailedForbidden and logged once per burst.
func (adapter) Classify(err error, _ *v1.Event) (pipeline.Class, bool) {
	c := pipeline.ClassOf(err)
	return c, c == pipeline.Rejected && (apierrors.IsAlreadyExists(err) || apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause))
}

// run is the sink's goroutine: every entry of its queue, in order, until
// the queue is closed (Stop, Shutdown) and empty.
func (s *sinkWriter) run(c *pipeline.Consumer[*v1.Event, sinkCounts]) {
	s.w.Progress = func() { c.Publish(&s.counts) }
	for {
		w, closed := s.q.Take()
		if w == nil {
			if closed {
				return
			}
			<-s.q.Ready()
			continue
		}
		s.handle(w)
		c.Reach(s.q.Done(w), &s.counts)
	}
}

// held is a patch of a repeat, correlated and not yet built or written,
// because the next repeat's patch may make it needless.
type held struct {
	d      decision
	ev     *v1.Event // the event correlated: the entry's first or an occurrence
	events uint64    // events whose fate its write is
	// skipped counts the repeats of the same event the spam filter
	// refused since: the correlator counted them after this patch, and
	// the answer to its write must not undo that.
	skipped int32
}

// handle is client-go's recordToSink for each event of an entry, in order:
// correlate, then write with retries. The entry's first event is shared
// with other watchers; the correlator copies it before anything is
// changed, and when a CorrelatorOptions function of the user's would see
// it, the sink gives its correlator a copy of its own, as client-go's sink
// does: a function that writes its argument writes only that sink's
// copy. The repeats folded into it are rebuilt from their times and
// correlated one by one, as client-go would have. Of a run of patches of
// the same event (repeats of the entry's first, not combined), only the
// last is built and written: a patch sets the count and the time, and the
// last carries those of the last repeat the spam filter allowed (see
// fold.go). Every other write is made before the next event is
// correlated, as in client-go, so that the correlator learns the server's
// answer first.
//
// The occurrences are rebuilt in the writer's two scratch events, no
// allocation each: one may be held while the next is correlated in the
// other. (A MessageFunc is given a named copy of an occurrence, and folds
// are off with a KeyFunc or SpamKeyFunc: no function of the user's is
// given a scratch event.)
func (s *sinkWriter) handle(w *waiting) {
	n := w.Events
	var h held
	for i := range n {
		if s.aborted() {
			s.w.Abandon(&s.counts.Counts, uint64(n-i)+h.events, pastDeadline)
			return
		}
		ev := w.First
		switch {
		case i > 0:
			ev = &s.scratch[0]
			if h.ev == ev {
				ev = &s.scratch[1]
			}
			occurrence(ev, w.First, w.Data.times[i-1])
		case s.corr.userCode:
			cp := *w.First // never reused: a function may keep it
			ev = &cp
		}
		d, err := s.corr.decide(ev, i > 0)
		if err != nil {
			s.counts.correlateErrors++
			s.w.Logger.Error(err, "Could not correlate event, recording it as it is", "event", klog.KObj(ev))
		}
		if d.skip {
			s.counts.spamSkipped++
			if !d.combined {
				h.skipped++
			}
			continue
		}
		patch := !d.combined && err == nil && d.resultCount(ev) > 1
		if patch && h.events > 0 { // the same event: it makes h needless
			h = held{d: d, ev: ev, events: h.events + 1}
			continue
		}
		s.writeHeld(&h)
		if patch {
			h = held{d: d, ev: ev, events: 1}
			continue
		}
		s.record(d.build(ev), d.combined, 1, 0)
	}
	s.writeHeld(&h)
}

// writeHeld builds and writes h's patch, if any, and empties h.
func (s *sinkWriter) writeHeld(h *held) {
	if h.events > 0 {
		s.record(h.d.build(h.ev), false, h.events, h.skipped)
	}
	*h = held{}
}

// pastDeadline is why a sink abandons what it holds.
const pastDeadline = "past the shutdown deadline"

// record writes a correlated event with retries, the fate of events
// events. The correlator is fed the server's answer with later counts
// (repeats it counted since) added. Past the shutdown deadline, it writes
// nothing: the events are abandoned.
func (s *sinkWriter) record(res *EventCorrelateResult, combined bool, events uint64, later int32) {
	if s.aborted() {
		s.w.Abandon(&s.counts.Counts, events, pastDeadline)
		return
	}
	s.patch, s.later = res.Patch, later
	if !s.w.WriteN(s.e.p.Aborting(), &s.counts.Counts, res.Event, s.attempt, events) {
		return
	}
	if combined {
		s.counts.aggregated += events
	} else if res.Event.Count > 1 {
		s.counts.deduplicated += events
	}
}

// write makes one attempt: Patch for a repeat, Create otherwise or when the
// patched event is gone, as client-go's recordEvent does. What the server
// stored is fed back to the correlator.
func (s *sinkWriter) write(ev *v1.Event) (got *v1.Event, created bool, err error) {
	update := ev.Count > 1
	if update {
		got, err = kube.Call(func() (*v1.Event, error) { return s.sink.Patch(ev, s.patch) })
	}
	if update && util.IsKeyNotFoundError(err) && s.aborted() {
		return nil, false, pipeline.ErrAbandoned // no Create after the deadline
	}
	if !update || util.IsKeyNotFoundError(err) {
		created = true
		ev.ResourceVersion = "" // a create must not carry one
		got, err = kube.Call(func() (*v1.Event, error) { return s.sink.Create(ev) })
	}
	if err == nil && got != nil {
		answer := got
		if s.later != 0 {
			a := *got
			a.Count += s.later
			answer = &a
		}
		s.corr.UpdateState(answer)
	}
	return got, created, err
}
