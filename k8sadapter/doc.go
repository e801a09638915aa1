// Package k8sadapter records Kubernetes core/v1 Events through herald: a
// drop-in replacement for client-go's record.NewBroadcaster.
//
// # Usage
//
// Change one line of a controller:
//
//	broadcaster := k8sadapter.NewBroadcaster() // was record.NewBroadcaster()
//	broadcaster.StartStructuredLogging(0)
//	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
//	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "my-controller"})
//	defer broadcaster.Shutdown()
//
//	recorder.Eventf(pod, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s", name)
//
// NewBroadcaster returns a *EventBroadcaster, which satisfies
// record.EventBroadcaster; NewRecorder returns a record.EventRecorderLogger.
// Everything else is unchanged: the options client-go has
// (WithSleepDuration, WithCorrelatorOptions, WithContext) mean what they
// mean there, and the events stored in the apiserver are the same.
//
// # What is the same
//
// Events are built as client-go builds them: a reference from the scheme, a
// name "<object>.<hex nanoseconds>" (a UUID when that is not a valid name),
// the "default" namespace for cluster-scoped objects, count 1, Source and
// the Reporting fields from the event source; only Normal and Warning are
// accepted. Each sink has its own EventCorrelator with client-go's keys and
// defaults: identical events become a count on one event (a strategic-merge
// patch of count, lastTimestamp and message, byte for byte client-go's);
// ten distinct messages about one object and reason within ten minutes
// become one "(combined from similar events): …" event; a source may record
// 25 events about one object and then one every five minutes. A sink
// receives Create for a first occurrence and Patch for a repeat, Create
// again (without resourceVersion) when the patched event is gone; errors
// are classified as client-go classifies them: a StatusError or a
// RequestConstructionError is final, any other error is retried up to 12
// attempts, the first pause random within WithSleepDuration.
//
// The events stored stay client-go's byte for byte, so the correlators
// here make no summaries (correlate.Summary): an event the spam filter
// skips is counted in Stats (SpamSkipped) and carried by the count of the
// next repeat that is written, as in client-go, and the tail of a flood
// is not written. (Package events, for events.k8s.io, writes a series'
// final count when it is evicted and at Shutdown.)
//
// # What herald adds
//
//   - Speed: the correlator builds patches without a JSON diff, nothing on
//     the path from a recorder to a sink starts a goroutine per event, and
//     a burst of repeats folds on its way to each sink (see Bursts).
//   - Flush: EventBroadcaster.Flush returns once every event recorded
//     before it has been handled by every started sink, handler and logger
//     (written, skipped, or given up on), bounded by its context. A
//     controller's unit test records, flushes and asserts, with no
//     polling; client-go's tests sleep.
//   - A flush on Shutdown: every event recorded before Shutdown reaches
//     every started sink (one attempt each once shutdown began), within
//     WithShutdownTimeout or the context of ShutdownContext. client-go
//     drops what is still queued. Likewise, a watcher's Stop takes effect
//     at its place in the queue: what was recorded before it is handled.
//   - Accounting: Stats counts every event in exactly one fate (created,
//     patched, spam-skipped, dropped at a full queue, failed by error
//     class, abandoned at shutdown...; see Stats for the equations), and
//     each drop is logged, once per burst with a count: a full queue
//     before the watchers, a sink or handler that falls behind its own
//     queue, recording after Shutdown. A sink's drops are logged by the
//     recorder that makes them, so the line appears while the sink hangs.
//     client-go drops silently when a sink falls behind.
//   - Containment: a sink or handler that panics is logged and counted and
//     the next event goes on; a sink that hangs holds only its own queue; a
//     sink that returns neither event nor error is counted, not a crash;
//     a recorder never panics on what it is given (a typed nil object or
//     reference is refused and counted: client-go dereferences it).
//   - An injectable clock (WithClock) for event timestamps, correlation,
//     retry pauses and the drop log's bursts, so that tests need not wait.
//   - PastEventf, which records an event at a given time (client-go dropped
//     it because it ignored the time).
//
// # Bursts: what folds, and what can still be dropped
//
// Each sink started has a queue, fed on the recording goroutine, that
// holds WithQueueLength events waiting for the sink. An event that repeats
// the newest event waiting for its object (same source, object and type:
// client-go's spam bucket), identical to it but for its name and
// timestamps, is folded into it: the queue keeps its time, not the event,
// up to 64 repeats a waiting event (the 65th takes a place of its own,
// and the next 64 fold into it). The sink then takes each folded event through
// its correlator, one by one and in order, as client-go's would: the spam
// filter spends a token on each, each gets its count, and a run of
// patches of the same event is written once, with the count and time of
// the last one the filter allowed. A burst of repeats thus costs the queue
// one place per object and 64 repeats, and the sink a create and a patch
// where client-go makes a write per event.
//
// The events stored are the ones client-go stores (a differential test
// checks it, field for field, across spam skips, combined events and
// interleaved objects): the events of one spam bucket reach the correlator
// in the order they were recorded, and all its decisions about them read
// only that bucket's state. Only the order in which keys of different
// buckets reach the correlator's LRU caches changes: which key a full
// cache forgets first may differ (a burst of more than 4096 distinct keys,
// by default, where client-go forgets keys too). With a CorrelatorOptions
// KeyFunc or SpamKeyFunc, which may group events across buckets, nothing
// folds. If no handler or logger is started and one sink is, a repeat
// folds before the recorder even builds it.
//
// What can still be lost, each counted in Stats and logged once per burst
// with a count: events that find WithQueueLength events waiting at a sink
// and do not fold into one (they are not repeats of the newest event
// waiting for their object, or it holds 64 repeats already:
// DroppedSinkQueue); events a handler or logger misses when its queue,
// or the queue all of them share, is full (DroppedWatcherQueue: handlers
// are owed every event, nothing folds there); events recorded after
// Shutdown began (DroppedClosed); events still queued when a shutdown
// deadline passes (Abandoned, HandlerAbandoned; the line that logs the
// deadline gives their number).
//
// # Deliberate differences from client-go
//
//   - Correlation keys are structs, so fields never run together (client-go
//     concatenates them: "ab"+"c" equals "a"+"bc").
//   - When a group of similar events must forget one member, herald forgets
//     the least recently seen, client-go a random one.
//   - A recorder logs to the logger of the WithContext context, not always
//     to klog's global logger.
//   - A log line about one event (a write that failed, a panic, a drop)
//     names it by namespace and name (klog.KObj); client-go's lines carry
//     the whole object, its message included, once per event.
//   - Negative LRUCacheSize or BurstSize mean the default; client-go builds
//     a cache that holds nothing or a filter that refuses everything.
//   - A panic in a handler, a sink or a CorrelatorOptions function is
//     recovered, logged and counted rather than crashing the process.
//   - A SpamKeyFunc is given the event before it is counted, not
//     client-go's copy with the name, count, first timestamp and resource
//     version of earlier occurrences (see EventCorrelator): a spam key
//     made of those fields differs.
//   - The watch.Interface returned by the Start… methods delivers nothing on
//     ResultChan (the events go to the handler); the channel closes once the
//     watcher's goroutine has finished.
//   - Two events about one object stamped at one instant (WithClock's fake
//     clock standing still, a coarse system clock, PastEventf given one
//     time twice) would get one name, and the server would refuse the
//     second: herald stamps the second a nanosecond later (below the
//     second that the stored timestamps keep), so that both are stored.
//     The event that combines similar ones is stamped so too: it would
//     otherwise take the name of the first event about its object.
//   - Shutdown waits for the handlers and sinks to handle what they are
//     owed; client-go's does not wait for them. So a handler or a sink
//     that calls Shutdown (or Flush) waits for itself: Shutdown returns
//     once its timeout passes, abandoning what is left, ShutdownContext
//     and Flush when their context ends. Call them from elsewhere.
//
// # Concurrency and goroutines
//
// Every method is safe for concurrent use. NewBroadcaster starts one
// goroutine; each Start… call starts one more, which runs its handler or
// sink one event at a time, in order, and ends once its watcher is
// stopped and what it was owed is handled. Shutdown ends them all. A
// stopped watcher is forgotten, its counts kept in Stats: starting and
// stopping watchers for ever keeps memory flat.
//
// # API changes
//
// Before the first tagged release:
//   - Stats.DroppedQueueFull, deprecated and always zero, is removed: read
//     DroppedSinkQueue and DroppedWatcherQueue.
package k8sadapter
