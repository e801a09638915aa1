// Package herald is typed, in-process publish/subscribe for Go, built on
// the event machinery Kubernetes has run in production for a decade, and
// handed back to Kubernetes as a faster, lossless event recorder.
//
// herald itself holds no code; it is the map of its packages.
//
// # Packages
//
//   - broadcast: Broadcaster[T] fans typed values out to many watchers, in
//     order, with a chosen policy for a watcher that falls behind (wait,
//     drop the newest, drop the oldest) and a count of every drop.
//   - ratelimit: token buckets, one per key, bounded by a least-recently-used
//     cache, with time passed in so tests control it.
//   - correlate: Correlator[T, K] folds floods of events into counts: exact
//     repeats are counted, many similar events are combined into one, and
//     a source that keeps repeating itself is rate limited.
//   - handle: Pool[T] runs a handler on each value of a source on many
//     workers, values of one key in order, with retries, a dead-letter
//     hook and a fate counted for every value; a durable natsbridge
//     watcher's values are acknowledged only once their handler returned.
//   - k8sadapter: the pieces above instantiated for Kubernetes core/v1
//     Events: a drop-in replacement for client-go's record.NewBroadcaster
//     that stores the same events, never starts a goroutine per event,
//     flushes on Shutdown and counts every event it drops.
//   - k8sadapter/events: the same for the newer events.k8s.io/v1 API and
//     client-go's tools/events (series of isomorphic events), with one
//     writer goroutine instead of one per event and a bounded cache.
//   - k8sadapter/recordtest: recorders for users' tests, for both event
//     APIs, that keep structured events and wait for them without sleeps,
//     optionally through the real correlation, to see what would be stored.
//   - k8sadapter/ctrlruntime (a module of its own): both recorders for a
//     controller-runtime manager, flushed when it stops, with Prometheus
//     metrics.
//   - natsbridge (a module of its own): Topic[T] carries broadcast's order
//     and policies across processes on NATS JetStream, one stream per
//     topic; natsbridge/embedded runs a NATS server in the process, and
//     natsbridge/natstest runs nats-server processes, alone or as a
//     cluster, for tests that kill and restart them.
//   - telemetry (a module of its own): every component's Stats as
//     OpenTelemetry metrics, one call each; the package telemetry needs
//     only the core and the OpenTelemetry metric API, and the natsbridge
//     and Kubernetes registrations are packages of their own in the same
//     module (telemetry/natstelemetry, telemetry/k8stelemetry), so that
//     only their users compile NATS or Kubernetes.
//
// The generic packages (broadcast, ratelimit, correlate, handle) import nothing
// from Kubernetes; only k8sadapter and its subpackages do.
//
// # Where to start
//
// Run the tour, which shows each piece at work:
//
//	go run ./examples/tour
//
// # Stability
//
// This module is at v0, released with herald's other modules at one
// version: a minor release may change its exported API, a patch release
// never does; every change is listed in the repository's CHANGELOG.md,
// and an identifier to be removed is marked Deprecated for one minor
// release first (README.md, "Stability").
package herald
