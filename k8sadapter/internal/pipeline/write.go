package pipeline

import (
	"context"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/heraldgo/herald/internal/burst"
	"github.com/heraldgo/herald/k8sadapter/internal/kube"
)

// Class is what an error from a sink means for the event being written.
// Each adapter's classifier keeps client-go's rules for its API.
type Class int

const (
	// Retry: the write may succeed later (a transport error, above all).
	Retry Class = iota
	// Construction: the request cannot be built; it would be built the
	// same way next time (rest.RequestConstructionError). Final.
	Construction
	// Rejected: the server refused the event (a StatusError). Final.
	Rejected
	// Forbidden: the server refused the write with 403 Forbidden (a
	// StatusError), its namespace not terminating: the identity's RBAC
	// rules lack the verb on events, mostly (an admission plugin that
	// denies events answers so too). Final: another attempt gets the same
	// answer until someone adds the rule.
	Forbidden
	// Panicked: the sink panicked. Final.
	Panicked
	// Abandoned: the attempt stopped short of a sink call it would have
	// made (ErrAbandoned): the shutdown deadline had passed. Final.
	Abandoned
)

// ErrAbandoned is what an attempt returns when it stops short of a sink
// call (a Create after a Patch found its event gone) because the shutdown
// deadline has passed: no sink call starts after it.
var ErrAbandoned = errors.New("the shutdown deadline passed")

// ClassOf is the classification both of client-go's event APIs share: a
// request that cannot be built, a StatusError (any: client-go does not
// retry even 429 or 5xx) and a sink panic are final, everything else
// (transport errors, UnexpectedObjectError, a wrapped StatusError) is
// worth another attempt. Each adapter refines it. A StatusError of 403
// Forbidden is Forbidden, not Rejected: final as in client-go, but told
// apart, because what mends it is an RBAC rule; but the 403 of a
// terminating namespace is Rejected, as the refusal of the namespace it
// is. ErrAbandoned is Abandoned.
func ClassOf(err error) Class {
	if err == ErrAbandoned {
		return Abandoned
	}
	switch err.(type) {
	case *rest.RequestConstructionError:
		return Construction
	case *apierrors.StatusError:
		if apierrors.IsForbidden(err) && !apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause) {
			return Forbidden
		}
		return Rejected
	case *kube.SinkPanic:
		return Panicked
	}
	return Retry
}

// Counts are the counters of one writer. They are a plain struct: the
// goroutine that writes owns them, and others see the copies it publishes
// with Consumer.Done.
type Counts struct {
	// Created and Patched count events written by Create and by Patch.
	Created, Patched uint64
	// FailedConstruction, FailedRejected, FailedForbidden and FailedPanic
	// count events given up on for an error of that class; FailedRetries
	// after the last of MaxTries attempts; FailedShutdown because the
	// shutdown began, or the writer's context ended, while they were
	// failing.
	FailedConstruction, FailedRejected, FailedForbidden, FailedPanic, FailedRetries, FailedShutdown uint64
	// Abandoned counts events left unwritten because a shutdown deadline
	// passed (or, for the events.k8s.io writer, its context ended).
	Abandoned uint64
	// Retries counts attempts after the first; NilResponses, writes the
	// sink answered with neither an event nor an error.
	Retries, NilResponses uint64
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Created += o.Created
	c.Patched += o.Patched
	c.FailedConstruction += o.FailedConstruction
	c.FailedRejected += o.FailedRejected
	c.FailedForbidden += o.FailedForbidden
	c.FailedPanic += o.FailedPanic
	c.FailedRetries += o.FailedRetries
	c.FailedShutdown += o.FailedShutdown
	c.Abandoned += o.Abandoned
	c.Retries += o.Retries
	c.NilResponses += o.NilResponses
}

// Attempt makes one attempt to write ev: Create, or Patch and Create when
// the patched event is gone. It reports what the sink returned and
// whether the event was created rather than patched.
type Attempt[E any] func(ev E) (got E, created bool, err error)

// Writer is the retry-and-classify write path of both adapters: it offers
// an event to a sink until it is written or given up on, with client-go's
// log lines, and counts the outcome. What differs between the two APIs is
// injected: the classifier of errors and the pause before each retry (the
// jitter), the Adapter's (Pipeline.NewWriter). Pauses run on Clock, so
// tests drive them with a fake clock.
//
// A Writer is used by one goroutine at a time; its fields are set before
// that goroutine starts.
type Writer[E Event] struct {
	// MaxTries is how many attempts an event gets (at least 1).
	MaxTries int
	// pauseFor and classify are the Adapter's Pause and Classify.
	pauseFor func(failures int) time.Duration
	classify func(err error, ev E) (c Class, quiet bool)
	// Clock runs the pauses.
	Clock clock.Clock
	// Stopping is closed when the shutdown begins: an event that fails
	// after that gets no further attempt.
	Stopping <-chan struct{}
	// Logger receives the log lines.
	Logger klog.Logger
	// Progress, if set, is called after each retry is counted, so that
	// Stats show a long series of retries while it runs, not only once
	// the event's fate is known.
	Progress func()

	// forbidden lets the refusals of class Forbidden be logged once per
	// burst: an identity without the RBAC rule is refused every event.
	forbidden burst.Burst
}

// NewWriter returns a Writer of maxTries attempts per event, with the
// adapter's Classify and Pause, its pauses on timers, stopping with the
// shutdown, logging to the pipeline's logger.
func (p *Pipeline[E, K, P, C]) NewWriter(maxTries int, timers clock.Clock) *Writer[E] {
	return &Writer[E]{
		MaxTries: maxTries,
		pauseFor: p.adapter.Pause,
		classify: p.adapter.Classify,
		Clock:    timers,
		Stopping: p.Stopping(),
		Logger:   p.logger,
	}
}

// Write offers ev to the sink through attempt, retrying as configured, and
// counts its fate in c: exactly one of Created, Patched, FailedConstruction,
// FailedRejected, FailedForbidden, FailedPanic, FailedRetries,
// FailedShutdown and Abandoned.
// It reports whether ev was written. It returns early, with FailedShutdown,
// when ctx ends or the shutdown begins during a pause.
func (w *Writer[E]) Write(ctx context.Context, c *Counts, ev E, attempt Attempt[E]) bool {
	return w.WriteN(ctx, c, ev, attempt, 1)
}

// WriteN is Write for a write that carries n events (repeats folded into
// one write): their fate is the write's, counted n times. Retries and
// NilResponses count attempts, once each.
func (w *Writer[E]) WriteN(ctx context.Context, c *Counts, ev E, attempt Attempt[E], n uint64) bool {
	for tries := 1; ; tries++ {
		class, created, err := w.try(c, ev, attempt)
		if err == nil {
			if created {
				c.Created += n
			} else {
				c.Patched += n
			}
			return true
		}
		switch class {
		case Construction:
			c.FailedConstruction += n
			return false
		case Rejected:
			c.FailedRejected += n
			return false
		case Forbidden:
			c.FailedForbidden += n
			return false
		case Panicked:
			c.FailedPanic += n
			return false
		case Abandoned:
			c.Abandoned += n
			return false
		}
		if tries >= w.MaxTries {
			c.FailedRetries += n
			w.Logger.Error(nil, "Unable to write event (retry limit exceeded!)", "event", klog.KObj(ev))
			return false
		}
		if !w.pause(ctx, w.pauseFor(tries)) {
			c.FailedShutdown += n
			w.Logger.Error(nil, "Unable to write event (broadcaster is shut down)", "event", klog.KObj(ev))
			return false
		}
		c.Retries++
		if w.Progress != nil {
			w.Progress()
		}
	}
}

// Abandon counts n events the caller held for the sink as Abandoned in
// c, and logs them with why: they will not be written (a shutdown's
// deadline passed, or the recording context ended).
func (w *Writer[E]) Abandon(c *Counts, n uint64, why string) {
	c.Abandoned += n
	w.Logger.Error(nil, "Abandoning the events held for the sink, unwritten", "abandoned", n, "reason", why)
}

// WriteOnce makes one attempt, for writes no single event is waiting on
// (the events.k8s.io series passes). It reports whether ev was written,
// and whether the matter is settled: written, or failed for good. It
// counts only NilResponses.
func (w *Writer[E]) WriteOnce(c *Counts, ev E, attempt Attempt[E]) (written, settled bool) {
	class, _, err := w.try(c, ev, attempt)
	return err == nil, err == nil || class != Retry
}

// try makes one attempt and logs its error as client-go does.
func (w *Writer[E]) try(c *Counts, ev E, attempt Attempt[E]) (Class, bool, error) {
	got, created, err := attempt(ev)
	if err == nil {
		var none E
		if got == none {
			// client-go crashes here; as far as the sink said, the event
			// was stored.
			c.NilResponses++
			w.Logger.Error(nil, "Event sink returned neither an event nor an error", "event", klog.KObj(ev))
		}
		return Retry, created, nil
	}
	class, quiet := w.classify(err, ev)
	if class == Forbidden {
		w.logForbidden(err, ev)
		return class, created, err
	}
	var msg string
	switch class {
	case Construction:
		msg = "Unable to construct event (will not retry!)"
	case Rejected:
		msg = "Server rejected event (will not retry!)"
	case Panicked:
		msg = "Event sink panicked (will not retry!)"
	case Abandoned:
		msg = "Abandoning event: the shutdown deadline passed"
	default:
		msg = "Unable to write event (may retry after sleeping)"
	}
	if quiet {
		w.Logger.V(5).Info(msg, "event", klog.KObj(ev), "err", err)
	} else {
		w.Logger.Error(err, msg, "event", klog.KObj(ev))
	}
	return class, created, err
}

// forbiddenMsg is the line of a write refused for want of an RBAC rule.
const forbiddenMsg = "Server forbade writing event (will not retry!): " +
	"check that the RBAC rules of this identity let it create and patch events in the event's API group " +
	"(the error names the user, verb, group and namespace), or what admission policy denies events"

// logForbidden logs a write refused with 403 Forbidden: one error line
// per burst (BurstInterval), with the count since the last one; the
// others at V(5). The error names the user, the verb, the API group and
// the namespace the rule is missing for.
func (w *Writer[E]) logForbidden(err error, ev E) {
	n, due := w.forbidden.Add(w.Clock.Now(), 1)
	if !due {
		w.Logger.V(5).Info(forbiddenMsg, "event", klog.KObj(ev), "err", err)
		return
	}
	w.Logger.Error(err, forbiddenMsg, "event", klog.KObj(ev),
		"forbiddenSinceLastReport", n, "reportedEvery", BurstInterval)
}

// pause waits d on the clock. It reports false, at once, if the shutdown
// has begun or ctx has ended, or as soon as either happens.
func (w *Writer[E]) pause(ctx context.Context, d time.Duration) bool {
	select {
	case <-w.Stopping:
		return false
	case <-ctx.Done():
		return false
	default:
	}
	if d <= 0 {
		return true
	}
	t := w.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-w.Stopping:
		return false
	case <-ctx.Done():
		return false
	}
}
