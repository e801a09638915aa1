package k8sadapter

import "github.com/heraldgo/herald/k8sadapter/internal/pipeline"

// Stats counts what happened to every event handed to the broadcaster's
// recorders: each one ends in exactly one fate, so that none is lost
// without a trace.
//
// On the recorder side, every call is counted in Recorded and in exactly
// one of:
//
//	Recorded = Queued + InvalidObject + InvalidType + DroppedClosed
//
// Each sink is owed every event queued while it was started (from
// StartRecordingToSink until its Stop, which takes effect at the queue
// position of the call), and each of these events ends in exactly one of
// its fate counters:
//
//	owed = Created + Patched + SpamSkipped + DroppedSinkQueue
//	       + FailedConstruction + FailedRejected + FailedForbidden
//	       + FailedRetries + FailedShutdown + FailedPanic + Abandoned
//
// An event folded into the one it repeats, waiting in a sink's queue, is
// counted in Folded as well; its fate is that of the write that carried
// its count (or SpamSkipped). Each handler (StartEventWatcher,
// StartLogging, StartStructuredLogging) is owed the events queued while
// it was started, and each of them ends in one of:
//
//	owed = Handled + DroppedWatcherQueue + HandlerAbandoned
//
// A Handle's Stats reports its own owed events as Queued. The equations hold
// exactly once the events have been handled: after Flush or Shutdown returned
// nil. Before, the events still queued or being written are in no fate yet.
// After a Shutdown cut short by its deadline, the events still waiting in a
// sink's queue are Abandoned when it returns; those a goroutine still holds
// get their fate when its current call returns (the event in the call its
// outcome, the rest of a sink's entry Abandoned, the rest of a handler's
// queue HandlerAbandoned). The broadcaster's Stats sums the sink and handler
// counters over every sink and handler it ever started; with one sink started
// before the first event and never stopped, the sink's owed events are
// Queued.
//
// Deduplicated, Aggregated, Folded, Retries, NilResponses, HandlerPanics
// and CorrelateErrors are not fates: they say more about events counted
// in one.
type Stats struct {
	// Recorded counts calls of Event, Eventf, AnnotatedEventf and
	// PastEventf.
	Recorded uint64
	// Queued counts events accepted for delivery to the sinks and
	// handlers.
	Queued uint64
	// InvalidObject counts events refused because no reference could be
	// built for their object (nil, typed nil, unknown to the scheme, no
	// metadata).
	InvalidObject uint64
	// InvalidType counts events refused for a type other than Normal or
	// Warning.
	InvalidType uint64
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
	// full: it fell behind by more than WithQueueLength events waiting,
	// and the event did not fold into one (a repeat of the newest event
	// waiting for the same object is folded into it, see Folded, up to 64
	// repeats an event waiting).
	DroppedSinkQueue uint64
	// FailedConstruction counts events given up on because the request
	// could not be built (rest.RequestConstructionError).
	FailedConstruction uint64
	// FailedRejected counts events the server rejected (any StatusError
	// but 403 Forbidden: AlreadyExists, namespace terminating, invalid,
	// throttled...).
	FailedRejected uint64
	// FailedForbidden counts events the server refused with 403 Forbidden:
	// the identity the sink writes with lacks an RBAC rule (create or
	// patch on events in the core API group). Final, as every StatusError
	// is in client-go; logged once per burst.
	FailedForbidden uint64
	// FailedRetries counts events given up on after the last of
	// WithMaxTries attempts failed.
	FailedRetries uint64
	// FailedShutdown counts events given up on because Shutdown began
	// while they were failing (they got one attempt).
	FailedShutdown uint64
	// FailedPanic counts events whose sink call panicked.
	FailedPanic uint64
	// Abandoned counts events still queued for a sink when the shutdown
	// deadline passed: those waiting in its queue, counted as the
	// deadline passes, and the rest of what it was writing then, counted
	// when that call returns.
	Abandoned uint64
	// Folded counts events that repeated the event waiting last for the
	// same object and source in a sink's queue, and were folded into it:
	// they took no place in the queue. The sink still hands each to its
	// correlator, and it is counted in a fate: that of the write that
	// carried its count (Patched, usually), or SpamSkipped.
	Folded uint64
	// Retries counts attempts after the first.
	Retries uint64
	// NilResponses counts sink calls that returned neither an event nor an
	// error; the event is counted as written.
	NilResponses uint64

	// DroppedWatcherQueue counts events a StartEventWatcher, StartLogging
	// or StartStructuredLogging watcher missed because its queue, or the
	// queue all of them share, was full (an event the latter refused
	// counts once per watcher started).
	DroppedWatcherQueue uint64
	// HandlerPanics counts calls of an event handler that panicked.
	HandlerPanics uint64
	// CorrelateErrors counts events whose correlation failed (a panicking
	// CorrelatorOptions function); they were written uncorrelated.
	CorrelateErrors uint64
	// Handled counts events handed to a StartEventWatcher, StartLogging or
	// StartStructuredLogging handler, one per handler (those that
	// panicked included).
	Handled uint64
	// HandlerAbandoned counts events queued for a handler that it was not
	// given because the shutdown deadline had passed, one per handler.
	HandlerAbandoned uint64
}

// sinkCounts are the counters of one sink, owned by its goroutine.
type sinkCounts struct {
	pipeline.Counts
	deduplicated, aggregated, spamSkipped, correlateErrors uint64
}

// AddCounts is pipeline.Adapter's: it adds a sink's counters o to c.
func (adapter) AddCounts(c *sinkCounts, o sinkCounts) {
	c.Counts.Add(o.Counts)
	c.deduplicated += o.deduplicated
	c.aggregated += o.aggregated
	c.spamSkipped += o.spamSkipped
	c.correlateErrors += o.correlateErrors
}

// sinkStats is the sink part of Stats, for one sink or for all of them;
// Queued is what they were owed.
func sinkStats(t pipeline.Tally[sinkCounts]) Stats {
	c := t.Counts
	return Stats{
		Queued: t.Queued, Created: c.Created, Patched: c.Patched, Deduplicated: c.deduplicated,
		Aggregated: c.aggregated, SpamSkipped: c.spamSkipped, DroppedSinkQueue: t.Dropped,
		FailedConstruction: c.FailedConstruction, FailedRejected: c.FailedRejected, FailedForbidden: c.FailedForbidden,
		FailedRetries: c.FailedRetries, FailedShutdown: c.FailedShutdown, FailedPanic: c.FailedPanic,
		Abandoned: c.Abandoned + t.Abandoned, Retries: c.Retries, NilResponses: c.NilResponses,
		CorrelateErrors: c.correlateErrors, Folded: t.Folded,
	}
}

// addHandlers sets the handler part of s, for one handler or for all.
func (s *Stats) addHandlers(t pipeline.Tally[pipeline.HandlerCounts]) {
	s.Handled, s.HandlerAbandoned = t.Handled-t.Counts.Abandoned, t.Counts.Abandoned
	s.DroppedWatcherQueue, s.HandlerPanics = t.Dropped, t.Counts.Panics
}
