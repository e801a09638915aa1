package k8sadapter

import (
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/internal/kube"
)

// sinkWriter writes the events of one watcher to one sink, one at a time,
// on that watcher's goroutine, with its own correlator.
type sinkWriter struct {
	e     *EventBroadcaster
	sink  record.EventSink
	corr  *EventCorrelator
	stats sinkStats
}

// outcome is how one attempt to write an event ended.
type outcome int

const (
	written outcome = iota
	retry
	failedConstruction
	failedRejected
	failedPanic
)

// record is client-go's recordToSink: correlate, then write with retries.
// The event it receives is shared with other watchers; the correlator
// copies it before anything is changed.
func (s *sinkWriter) record(ev *v1.Event) {
	e := s.e
	if e.life.Aborted() {
		s.stats.abandoned.Add(1)
		return
	}
	res, combined, err := s.corr.correlate(ev)
	if err != nil {
		s.stats.correlateErrors.Add(1)
		e.logger.Error(err, "Could not correlate event, recording it as it is", "event", klog.KObj(ev))
	}
	if res.Skip {
		s.stats.spamSkipped.Add(1)
		return
	}
	ev = res.Event
	for tries := 1; ; tries++ {
		switch s.write(ev, res.Patch) {
		case written:
			if combined {
				s.stats.aggregated.Add(1)
			} else if ev.Count > 1 {
				s.stats.deduplicated.Add(1)
			}
			return
		case failedConstruction:
			s.stats.failedConstruction.Add(1)
			return
		case failedRejected:
			s.stats.failedRejected.Add(1)
			return
		case failedPanic:
			s.stats.failedPanic.Add(1)
			return
		}
		if tries >= e.cfg.maxTries {
			s.stats.failedRetries.Add(1)
			e.logger.Error(nil, "Unable to write event (retry limit exceeded!)", "event", klog.KObj(ev))
			return
		}
		// The first pause is random, so that clients do not retry in step
		// after an apiserver outage.
		delay := e.cfg.sleep
		if tries == 1 {
			delay = time.Duration(float64(delay) * rand.Float64())
		}
		if e.life.IsStopping() || !e.life.Pause(e.timers, delay) {
			s.stats.failedShutdown.Add(1)
			e.logger.Error(nil, "Unable to write event (broadcaster is shut down)", "event", klog.KObj(ev))
			return
		}
		s.stats.retries.Add(1)
	}
}

// write makes one attempt: Patch for a repeat, Create otherwise or when the
// patched event is gone, as client-go's recordEvent does, and classifies
// the error as client-go does.
func (s *sinkWriter) write(ev *v1.Event, patch []byte) outcome {
	var got *v1.Event
	var err error
	update := ev.Count > 1
	if update {
		got, err = kube.Call(func() (*v1.Event, error) { return s.sink.Patch(ev, patch) })
	}
	created := !update || util.IsKeyNotFoundError(err)
	if created {
		ev.ResourceVersion = "" // a create must not carry one
		got, err = kube.Call(func() (*v1.Event, error) { return s.sink.Create(ev) })
	}
	if err == nil {
		if got != nil {
			s.corr.UpdateState(got)
		} else {
			// client-go crashes here; the event was stored, as far as the
			// sink said, but the next repeat cannot know its name.
			s.stats.nilResponses.Add(1)
			s.e.logger.Error(nil, "Event sink returned neither an event nor an error", "event", klog.KObj(ev))
		}
		if created {
			s.stats.created.Add(1)
		} else {
			s.stats.patched.Add(1)
		}
		return written
	}
	logger := s.e.logger
	switch err.(type) {
	case *rest.RequestConstructionError:
		logger.Error(err, "Unable to construct event (will not retry!)", "event", klog.KObj(ev))
		return failedConstruction
	case *apierrors.StatusError:
		if apierrors.IsAlreadyExists(err) || apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause) {
			logger.V(5).Info("Server rejected event (will not retry!)", "event", klog.KObj(ev), "err", err)
		} else {
			logger.Error(err, "Server rejected event (will not retry!)", "event", klog.KObj(ev))
		}
		return failedRejected
	case *kube.SinkPanic:
		logger.Error(err, "Event sink panicked (will not retry!)", "event", klog.KObj(ev))
		return failedPanic
	}
	// UnexpectedObjectError and everything else (transport errors above
	// all) are worth another attempt.
	logger.Error(err, "Unable to write event (may retry after sleeping)", "event", klog.KObj(ev))
	return retry
}
