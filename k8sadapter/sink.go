package k8sadapter

import (
	"context"
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/internal/kube"
	"github.com/heraldgo/herald/internal/pipeline"
)

// sinkWriter writes the events of one watcher to one sink, one at a time,
// on that watcher's goroutine, with its own correlator. Everything in it
// belongs to that goroutine.
type sinkWriter struct {
	e       *EventBroadcaster
	sink    record.EventSink
	corr    *EventCorrelator
	w       pipeline.Writer[*v1.Event]
	attempt pipeline.Attempt[*v1.Event] // s.write, bound once
	patch   []byte                      // the patch of the event being written
	counts  sinkCounts
}

func (e *EventBroadcaster) newSinkWriter(sink record.EventSink) *sinkWriter {
	s := &sinkWriter{
		e:    e,
		sink: sink,
		corr: NewEventCorrelatorWithOptions(e.correlatorOptions()),
		w: pipeline.Writer[*v1.Event]{
			MaxTries: e.cfg.MaxTries,
			Pause:    pause(e.cfg.Sleep),
			Classify: classify,
			Clock:    e.timers,
			Stopping: e.p.Stopping(),
			Logger:   e.logger,
		},
	}
	s.attempt = s.write
	return s
}

// pause is client-go's spacing of attempts: the first pause is a random
// fraction of sleep, so that clients do not retry in step after an
// apiserver outage; the others are sleep.
func pause(sleep time.Duration) func(int) time.Duration {
	return func(failures int) time.Duration {
		if failures == 1 {
			return time.Duration(float64(sleep) * rand.Float64())
		}
		return sleep
	}
}

// classify is client-go's recordEvent classification: every StatusError
// is final; AlreadyExists and a terminating namespace are expected, and
// logged at V(5).
func classify(err error, _ *v1.Event) (pipeline.Class, bool) {
	c := pipeline.ClassOf(err)
	return c, c == pipeline.Rejected && (apierrors.IsAlreadyExists(err) || apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause))
}

// run is the sink's goroutine: every event of its watcher, in order.
func (s *sinkWriter) run(c *pipeline.Consumer[*v1.Event, sinkCounts]) {
	s.w.Progress = func() { c.Publish(&s.counts) }
	for ev := range c.All() {
		s.record(ev)
		c.Done(&s.counts)
	}
}

// record is client-go's recordToSink: correlate, then write with retries.
// The event it receives is shared with other watchers; the correlator
// copies it before anything is changed.
func (s *sinkWriter) record(ev *v1.Event) {
	if s.e.p.Aborted() {
		s.counts.Abandoned++
		return
	}
	res, combined, err := s.corr.correlate(ev)
	if err != nil {
		s.counts.correlateErrors++
		s.w.Logger.Error(err, "Could not correlate event, recording it as it is", "event", klog.KObj(ev))
	}
	if res.Skip {
		s.counts.spamSkipped++
		return
	}
	s.patch = res.Patch
	if !s.w.Write(context.Background(), &s.counts.Counts, res.Event, s.attempt) {
		return
	}
	if combined {
		s.counts.aggregated++
	} else if res.Event.Count > 1 {
		s.counts.deduplicated++
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
	if !update || util.IsKeyNotFoundError(err) {
		created = true
		ev.ResourceVersion = "" // a create must not carry one
		got, err = kube.Call(func() (*v1.Event, error) { return s.sink.Create(ev) })
	}
	if err == nil && got != nil {
		s.corr.UpdateState(got)
	}
	return got, created, err
}
