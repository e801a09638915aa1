package events

import "github.com/heraldgo/herald/k8sadapter/internal/pipeline"

// Stats counts what happened to every event handed to the broadcaster's
// recorders; each one ends in exactly one fate. On the recorder side,
// every Eventf call is counted in Recorded and in exactly one of:
//
//	Recorded = Queued + InvalidObject + InvalidType + DroppedClosed
//
// The sink's writer is owed every queued event (its queue exists from
// NewBroadcaster on, so events recorded before StartRecordingToSinkWithContext
// wait for it), and each ends in exactly one of:
//
//	Queued = Created + Patched + SeriesObserved + DroppedSinkQueue
//	         + FailedConstruction + FailedRejected + FailedForbidden
//	         + FailedRetries + FailedShutdown + FailedPanic + Abandoned
//
// An event folded into the event of its series already waiting for the
// writer is counted in Folded as well, and in the fate client-go would
// have given it: Patched (or a failure) if it was its series' second,
// SeriesObserved after that.
//
// Each handler of StartEventWatcher or StartLogging is owed the events
// queued while it was started, and each ends in one of:
//
//	owed = Handled + DroppedWatcherQueue + HandlerAbandoned
//
// The equations hold exactly once the events have been handled: after
// Flush while recording, or after Shutdown. Before, events still queued or
// being written are in no fate yet; so are events queued while recording
// is stopped, until it starts again or Shutdown abandons them. After a
// Shutdown cut short by its deadline, the events still waiting in the
// writer's queue are Abandoned when it returns; those a goroutine still
// holds get their fate when its current call returns.
//
// Writes that no single event caused (the refresh and finish passes, the
// final count of a series at eviction or shutdown) are SeriesWrites and
// SeriesWriteFailures, and those not made SeriesUnwritten, not fates; nor are
// Folded, Evicted, Retries, NilResponses and HandlerPanics.
type Stats struct {
	// The recorder side. Recorded counts Eventf calls. Queued counts the
	// events accepted, for the writer and the handlers; the others were
	// refused: InvalidObject for want of a reference to the regarding
	// object (nil, typed nil, unknown to the scheme), InvalidType for a
	// type other than Normal or Warning, DroppedClosed (below) because
	// Shutdown had begun.
	Recorded, Queued, InvalidObject, InvalidType uint64
	// DroppedClosed counts events refused because Shutdown had begun.
	DroppedClosed uint64

	// What the sink's writer did with each queued event. Created: a first
	// occurrence, or a second whose event was gone, created. Patched: a
	// second occurrence written as a series (of 2, or of more when later
	// ones were folded into it). SeriesObserved: a third or later
	// occurrence, counted in its series and written by the next refresh,
	// finish or flush, or with the series' first patch when it was folded.
	Created, Patched, SeriesObserved uint64
	// Folded counts events that arrived while an earlier event of their
	// series still waited for the writer, and were folded into it: they
	// took no place in the writer's queue, and reached the sink as part of
	// their series' count. It is not a fate: each is also counted in one
	// of the above.
	Folded uint64
	// Evicted counts events forgotten because the cache was full (an open
	// series has its final count written first). It is not a fate: the
	// event was handled before.
	Evicted uint64
	// The writer's other fates. DroppedSinkQueue: refused by the writer's
	// queue, which held its capacity of series waiting (WithQueueLength,
	// never below WithCacheSize; a repeat of a waiting series is folded,
	// never refused). FailedConstruction: the
	// request could not be built. FailedRejected: the server refused it (a
	// StatusError other than AlreadyExists on a series, which is
	// retried, and 403 Forbidden). FailedForbidden: the server refused it
	// with 403 Forbidden, the writer's identity lacking an RBAC rule
	// (create or patch on events in the events.k8s.io API group); final,
	// logged once per burst. FailedRetries: given up on after the last
	// attempt.
	// FailedShutdown: given up on because the shutdown began, or the
	// recording context ended, while it was failing. FailedPanic: the
	// sink panicked. Abandoned: left unwritten because the recording
	// context ended, or because the broadcaster shut down while no writer
	// was recording or after its deadline passed.
	DroppedSinkQueue, FailedConstruction, FailedRejected, FailedForbidden, FailedRetries, FailedShutdown, FailedPanic, Abandoned uint64
	// Retries counts attempts after the first.
	Retries uint64
	// SeriesWrites counts series counts written by the refresh, finish and
	// shutdown passes and at eviction; SeriesWriteFailures those that
	// failed. SeriesUnwritten counts open series whose final count the
	// shutdown did not write because its deadline had passed: the server
	// keeps the count it had (the log line says by how many events it
	// falls short).
	SeriesWrites, SeriesWriteFailures, SeriesUnwritten uint64
	// NilResponses counts sink calls that returned neither event nor error.
	NilResponses uint64
	// The handlers of StartEventWatcher and StartLogging: DroppedWatcherQueue
	// counts events one missed because its queue, or the queue all of them
	// share, was full (an event the latter refused counts once per handler
	// started); HandlerPanics, calls that panicked; Handled, events handed
	// to one (one per handler, those that panicked included);
	// HandlerAbandoned, events not handed to one because the shutdown
	// deadline had passed.
	DroppedWatcherQueue, HandlerPanics, Handled, HandlerAbandoned uint64
}

// writerCounts are the writer's counters, owned by the goroutine that
// writes.
type writerCounts struct {
	pipeline.Counts
	seriesObserved, evicted, seriesWrites, seriesWriteFailures, seriesUnwritten uint64
}

// stats assembles Stats from the counters of the recorder side, the
// writer and the handlers.
func stats(r pipeline.RecorderCounts, w pipeline.Tally[writerCounts], h pipeline.Tally[pipeline.HandlerCounts]) Stats {
	c := w.Counts
	return Stats{
		Recorded: r.Recorded, Queued: r.Queued, InvalidObject: r.InvalidObject, InvalidType: r.InvalidType,
		DroppedClosed: r.DroppedClosed,

		Created: c.Created, Patched: c.Patched, SeriesObserved: c.seriesObserved, Folded: w.Folded, Evicted: c.evicted, DroppedSinkQueue: w.Dropped,
		FailedConstruction: c.FailedConstruction, FailedRejected: c.FailedRejected, FailedForbidden: c.FailedForbidden, FailedRetries: c.FailedRetries,
		FailedShutdown: c.FailedShutdown, FailedPanic: c.FailedPanic, Abandoned: c.Abandoned + w.Abandoned, Retries: c.Retries,
		SeriesWrites: c.seriesWrites, SeriesWriteFailures: c.seriesWriteFailures, SeriesUnwritten: c.seriesUnwritten,
		NilResponses: c.NilResponses,

		DroppedWatcherQueue: h.Dropped, HandlerPanics: h.Counts.Panics, Handled: h.Handled - h.Counts.Abandoned,
		HandlerAbandoned: h.Counts.Abandoned,
	}
}
