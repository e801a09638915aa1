package events

// Stats counts what happened to every event handed to the broadcaster's
// recorders. On the recorder side:
//
//	Recorded = Queued + InvalidObject + InvalidType + DroppedQueueFull + DroppedClosed
//
// and at the sink, once the writer has taken every queued event:
//
//	Queued = Created + Patched + SeriesObserved + DroppedSinkQueue
//	         + FailedConstruction + FailedRejected + FailedRetries
//	         + FailedShutdown + FailedPanic + Abandoned
//
// Writes that no single event caused (the refresh and finish passes, the
// final count of a series at eviction or shutdown) are SeriesWrites.
type Stats struct {
	// Recorded counts Eventf calls.
	Recorded uint64
	// Queued counts events accepted for the watchers.
	Queued uint64
	// InvalidObject counts events refused for want of a reference to the
	// regarding object.
	InvalidObject uint64
	// InvalidType counts events refused for a type other than Normal or
	// Warning.
	InvalidType uint64
	// DroppedQueueFull counts events refused because the queue was full.
	DroppedQueueFull uint64
	// DroppedClosed counts events recorded after Shutdown began.
	DroppedClosed uint64

	// Created counts events the sink created: first occurrences, and
	// second ones whose event was gone.
	Created uint64
	// Patched counts second occurrences written as a series of 2.
	Patched uint64
	// SeriesObserved counts third and later occurrences, counted in their
	// series and written by the next refresh, finish or flush.
	SeriesObserved uint64
	// Evicted counts events forgotten because the cache was full (an open
	// series has its final count written first).
	Evicted uint64
	// DroppedSinkQueue counts events the writer missed because its queue
	// was full.
	DroppedSinkQueue uint64
	// FailedConstruction counts events whose request could not be built.
	FailedConstruction uint64
	// FailedRejected counts events the server refused (a StatusError other
	// than AlreadyExists on a series, which is retried).
	FailedRejected uint64
	// FailedRetries counts events given up on after the last attempt.
	FailedRetries uint64
	// FailedShutdown counts events given up on because the shutdown began
	// (or the recording context ended) while they were failing.
	FailedShutdown uint64
	// FailedPanic counts events whose sink call panicked.
	FailedPanic uint64
	// Abandoned counts events still queued when the recording context
	// ended or a shutdown deadline passed.
	Abandoned uint64
	// Retries counts attempts after the first.
	Retries uint64
	// SeriesWrites counts series counts written by the refresh, finish and
	// shutdown passes and at eviction; SeriesWriteFailures those that
	// failed.
	SeriesWrites, SeriesWriteFailures uint64
	// NilResponses counts sink calls that returned neither event nor error.
	NilResponses uint64
	// DroppedWatcherQueue counts events a StartEventWatcher or logging
	// watcher missed because its queue was full.
	DroppedWatcherQueue uint64
	// HandlerPanics counts handler calls that panicked.
	HandlerPanics uint64
}
