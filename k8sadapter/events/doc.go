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
// series of count 2, later ones are counted and written by a refresh of
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
//   - The series cache is bounded (WithCacheSize, least recently seen
//     forgotten, evictions counted; an open series gets its final count
//     written first).
//   - Shutdown flushes: queued events are written (one attempt each) and
//     every open series gets its final count, within the shutdown timeout.
//   - Every event is accounted for in Stats.
//   - One clock (WithClock) for event times, names, series and the
//     periodic passes; client-go uses the real clock for event times and to
//     finish series.
//   - A sink or handler that panics is logged and counted.
//   - StartRecordingToSinkWithContext starts the writer once; a second
//     call returns ErrRecording (client-go starts a second set of
//     goroutines on the same cache).
package events
