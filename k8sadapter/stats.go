package k8sadapter

import "sync/atomic"

// Stats counts what happened to every event handed to the broadcaster's
// recorders. The counters add up (see the invariants below), so that an
// event is never lost without a trace.
//
// On the recorder side:
//
//	Recorded = Queued + InvalidObject + InvalidType + DroppedQueueFull + DroppedClosed
//
// and for each sink, over the events queued while it was started:
//
//	queued = Created + Patched + SpamSkipped + DroppedSinkQueue
//	         + FailedConstruction + FailedRejected + FailedRetries
//	         + FailedShutdown + FailedPanic + Abandoned
//
// The sink counters are summed over all sinks.
type Stats struct {
	// Recorded counts calls of Event, Eventf, AnnotatedEventf and
	// PastEventf.
	Recorded uint64
	// Queued counts events accepted for delivery to the watchers.
	Queued uint64
	// InvalidObject counts events refused because no reference could be
	// built for their object (nil, unknown to the scheme, no metadata).
	InvalidObject uint64
	// InvalidType counts events refused for a type other than Normal or
	// Warning.
	InvalidType uint64
	// DroppedQueueFull counts events refused because the queue between
	// recorders and watchers was full.
	DroppedQueueFull uint64
	// DroppedClosed counts events recorded after Shutdown began.
	DroppedClosed uint64

	// Created counts events a sink created (including after a patch found
	// its event gone).
	Created uint64
	// Patched counts repeats a sink patched into an existing event.
	Patched uint64
	// Deduplicated counts written events that were repeats of an earlier
	// identical event (count > 1), a subset of Created + Patched.
	Deduplicated uint64
	// Aggregated counts written events that were replaced by the combined
	// event of their group of similar events, a subset of Created + Patched.
	Aggregated uint64
	// SpamSkipped counts events the spam filter refused; they were still
	// counted, and the next written repeat carries their count.
	SpamSkipped uint64
	// DroppedSinkQueue counts events a sink missed because its queue was
	// full (it fell behind by more than the queue length).
	DroppedSinkQueue uint64
	// FailedConstruction counts events given up on because the request
	// could not be built (rest.RequestConstructionError).
	FailedConstruction uint64
	// FailedRejected counts events the server rejected (any StatusError:
	// AlreadyExists, namespace terminating, invalid, throttled...).
	FailedRejected uint64
	// FailedRetries counts events given up on after the last of
	// WithMaxTries attempts failed.
	FailedRetries uint64
	// FailedShutdown counts events given up on because Shutdown began
	// while they were failing (they got one attempt).
	FailedShutdown uint64
	// FailedPanic counts events whose sink call panicked.
	FailedPanic uint64
	// Abandoned counts events still queued for a sink when the shutdown
	// deadline passed.
	Abandoned uint64
	// Retries counts attempts after the first.
	Retries uint64
	// NilResponses counts sink calls that returned neither an event nor an
	// error; the event is counted as written.
	NilResponses uint64

	// DroppedWatcherQueue counts events a StartEventWatcher, StartLogging
	// or StartStructuredLogging watcher missed because its queue was full.
	DroppedWatcherQueue uint64
	// HandlerPanics counts calls of an event handler that panicked.
	HandlerPanics uint64
	// CorrelateErrors counts events whose correlation failed (a panicking
	// CorrelatorOptions function); they were written uncorrelated.
	CorrelateErrors uint64
}

// sinkStats are the counters of one sink.
type sinkStats struct {
	created, patched, deduplicated, aggregated, spamSkipped           atomic.Uint64
	failedConstruction, failedRejected, failedRetries, failedShutdown atomic.Uint64
	failedPanic, abandoned, retries, nilResponses, correlateErrors    atomic.Uint64
}

func (s *sinkStats) addTo(st *Stats) {
	st.Created += s.created.Load()
	st.Patched += s.patched.Load()
	st.Deduplicated += s.deduplicated.Load()
	st.Aggregated += s.aggregated.Load()
	st.SpamSkipped += s.spamSkipped.Load()
	st.FailedConstruction += s.failedConstruction.Load()
	st.FailedRejected += s.failedRejected.Load()
	st.FailedRetries += s.failedRetries.Load()
	st.FailedShutdown += s.failedShutdown.Load()
	st.FailedPanic += s.failedPanic.Load()
	st.Abandoned += s.abandoned.Load()
	st.Retries += s.retries.Load()
	st.NilResponses += s.nilResponses.Load()
	st.CorrelateErrors += s.correlateErrors.Load()
}
