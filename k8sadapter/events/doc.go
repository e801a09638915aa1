// Package events records events.k8s.io/v1 Events — the newer Kubernetes
// event API, with series — through herald: a drop-in for client-go's
// tools/events broadcaster, bounded where that one is not.
//
// It is a package of its own, beside k8sadapter (core/v1), for the reason
// client-go has two: the two APIs share names (NewBroadcaster,
// EventBroadcaster, EventSink) with different shapes.
//
// # Usage
//
//	broadcaster := events.NewBroadcaster(&clientevents.EventSinkImpl{Interface: client.EventsV1()})
//	_ = broadcaster.StartRecordingToSinkWithContext(ctx)
//	recorder := broadcaster.NewRecorder(scheme.Scheme, "my-scheduler")
//	defer broadcaster.Shutdown() // writes what is queued and every series' final count
//
//	recorder.Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "0/%d nodes are available", n)
//
// # What is the same
//
// Events are built as client-go builds them (name "<object>.<hex nanos>"
// or a UUID, the "default" namespace for cluster-scoped objects, reporting
// instance "<controller>-<host>"). Events equal in type, action, reason,
// reporting controller and instance, regarding and related objects (not in
// note) form a series: the first is created, the second patched with a
// series of count 2 (or more, if later ones waited for the writer with it:
// see Bursts), later ones are counted and written by a refresh of
// every open series each 30 minutes and by a finish pass every 6 minutes
// that writes the final count of a series unobserved for 6 minutes and
// forgets it. Writes are retried as client-go retries them (12 attempts,
// pauses of 10 s jittered by up to 25 %, AlreadyExists retried for a
// series, other StatusErrors and request construction errors final).
//
// # What herald changes
//
//   - No goroutine per event or per write: Eventf queues without blocking
//     (client-go starts a goroutine that blocks per event, and another per
//     write, with an unbounded cache: kube-scheduler was seen with millions
//     of them). One writer goroutine writes, in order; a failing event holds
//     the writer during its retries, as in client-go's core/v1 path.
//   - Repeats fold on their way to the writer (see Bursts): a burst of
//     isomorphic events costs a place per series in the writer's queue,
//     and stores the count of every call.
//   - The series cache is bounded (WithCacheSize, least recently seen
//     forgotten, evictions counted; an open series gets its final count
//     written first).
//   - Nothing recorded is lost for want of a writer: the writer's queue
//     exists from NewBroadcaster on, so the events recorded before
//     StartRecordingToSinkWithContext, or after its context ended, wait
//     for it (up to its capacity in series). Recording can be started again
//     after its context ended, with the same series; while it runs, a
//     second start returns ErrRecording (client-go starts a second set of
//     goroutines on the same cache).
//   - Flush returns once every event recorded before it has been handled
//     by the writer (if recording) and every handler and logger, bounded by
//     its context: a unit test records, flushes and asserts, no polling.
//   - Shutdown flushes: queued events are written (one attempt each) and
//     every open series gets its final count, within the shutdown timeout.
//     What waits for a writer that is not recording is counted as
//     abandoned, and so is what the timeout cuts short (open series left
//     without their final count: SeriesUnwritten), each logged with its
//     number. Unlike client-go's, Shutdown waits for the handlers and the
//     writer: a handler or the sink that calls it waits for itself, until
//     the timeout.
//   - Every event is accounted for in Stats, in exactly one fate, and
//     every drop is logged once per burst, with a count (client-go's
//     recorder logs a line per refused event).
//   - One clock (WithClock) for event times, names, series, the periodic
//     passes, retry pauses and the drop log's bursts; client-go uses the
//     real clock for event times and to finish series. Two events about
//     one object named at one instant (a fake clock standing still) would
//     get one name, and the server would refuse the second: the second is
//     named a nanosecond later.
//   - A sink or handler that panics is logged and counted; a recorder never
//     panics on what it is given (a typed nil regarding object is refused
//     and counted).
//   - Loggers are fixed when made: the broadcaster, its recorders and its
//     logging watchers log to klog's global logger, or to the WithLogger
//     option's (a recorder to its own WithLogger's); the writer logs to
//     the logger of its recording context.
//   - A log line about one event (a write that failed, a panic, a drop)
//     names it by namespace and name (klog.KObj); client-go's lines carry
//     the whole object, its note included.
//
// # Bursts: what folds, and what can still be dropped
//
// The writer's queue is fed on the recording goroutine and holds series,
// not events: WithQueueLength of them (never fewer than WithCacheSize). An
// event isomorphic to one waiting for the writer is folded into it, under
// the queue's lock, with no allocation: the queue keeps its count and the
// time of the last one; client-go keeps no more of a series' later events
// either. If no handler or logger is started, a repeat folds before the
// recorder even builds it. The writer takes the series in the order of
// their first event, and writes what client-go would have written by its
// finish pass or Shutdown, in fewer writes: n events of a new series make
// a create and one patch of count n (client-go: a create, a patch of
// count 2 and, minutes later, a patch of count n); n events of a series
// the writer knows count into it, written by the next pass or Shutdown.
// So a burst of repeats over at most that many series loses nothing,
// however slow the writer, and the stored counts equal the calls.
//
// What can still be lost, each counted in Stats and logged once per burst
// with a count: a new series while the writer's queue holds its capacity
// of series waiting (DroppedSinkQueue); events a handler or logger misses
// when its queue, or the queue all of them share, is full
// (DroppedWatcherQueue: handlers are owed every event, nothing folds
// there); events recorded after Shutdown began (DroppedClosed); events
// still queued when the recording context ends or a shutdown deadline
// passes, or when Shutdown finds no writer recording (Abandoned,
// HandlerAbandoned).
//
// # API changes
//
// Before the first tagged release:
//   - Stats.DroppedQueueFull, deprecated and always zero, is removed: read
//     DroppedSinkQueue and DroppedWatcherQueue.
package events
