// Package ctrlruntime wires herald's event recorders into a
// controller-runtime manager: one call, and a reconciler records core/v1
// and events.k8s.io/v1 events through herald, flushed to the apiserver when
// the manager stops.
//
// # Usage
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme})
//	…
//	events, err := ctrlruntime.New(mgr)
//	…
//	r := &Reconciler{
//		Client:   mgr.GetClient(),
//		Recorder: events.GetEventRecorder("my-controller"), // was: mgr.GetEventRecorder("my-controller")
//	}
//	…
//	err = mgr.Start(ctx) // on return, every recorded event is in the apiserver
//
// GetEventRecorderFor (core/v1, record.EventRecorder) and GetEventRecorder
// (events.k8s.io/v1, events.EventRecorder) have the names and the types of
// the manager's own methods, so a reconciler changes one call. The recorders
// are herald's: k8sadapter's for core/v1 and k8sadapter/events' for
// events.k8s.io/v1, with client-go's correlation and series, no goroutine
// per event, and every event accounted for in Stats.
//
// # Lifecycle
//
// New adds a runnable to the manager. The Provider's two broadcasters start
// when the manager starts, or when the first recorder is handed out if that
// is earlier (as controller-runtime's own recorders start on first use).
// Their goroutines are a fixed few: for each API one that distributes
// events, one that writes them to the apiserver and one that logs them.
// When the manager starts the runnable, it also checks the permission to
// write events (see Permissions), on the runnable's goroutine, before it
// waits for the manager to stop.
//
// When the manager stops, the Provider flushes: every event recorded before
// is written to the apiserver, series get their final counts, and then the
// goroutines end, within WithShutdownTimeout. The manager stops the
// Provider after its controllers have returned from their last Reconcile
// (it is stopped together with the manager's caches), so events a
// reconciler records while the manager stops are written too, and before
// mgr.Start returns, so a program that exits after mgr.Start loses
// nothing. controller-runtime's own broadcasters are stopped last, with a
// context the manager has already cancelled, and drop what is queued.
//
// The flush must fit in the manager's GracefulShutdownTimeout (30 s by
// default, above the Provider's default of 10 s): the manager does not wait
// longer for its runnables. A manager that is never started does not stop
// the Provider: call Shutdown then. A manager that leads through the
// Provider's LeaderLock records "stopped leading" after its runnables
// stopped: the Provider then flushes the core/v1 broadcaster, and shuts it
// down after that event (see Leader election).
//
// # Logs
//
// Every event is logged at verbosity 1 to the manager's logger, named
// "events", as the manager's own recorders log them, but with the lines
// of client-go's structured logging ("Event occurred", with keys object,
// fieldPath, kind, apiVersion, type, reason, message) where the manager's
// recorders write the event's message as the line; so are the
// broadcasters' own errors (a dropped event, a failed write).
//
// # Metrics
//
// The Provider's Stats are also Prometheus metrics, registered in
// controller-runtime's metrics registry (served on the manager's metrics
// endpoint) unless WithRegisterer says otherwise. Every counter has the
// label api, "core/v1" or "events.k8s.io/v1":
//
//	herald_events_recorded_total{api}          events handed to a recorder
//	herald_events_total{api,fate}              what became of them; fate is one of
//	                                           created, patched, spam_skipped (core/v1),
//	                                           series_observed (events.k8s.io/v1),
//	                                           dropped, failed
//	herald_events_dropped_total{api,reason}    the dropped ones, by reason: invalid_object,
//	                                           invalid_type, closed,
//	                                           sink_queue_full, shutdown_timeout
//	herald_events_failed_total{api,reason}     the failed ones, by reason: construction,
//	                                           rejected, forbidden (403: see Permissions),
//	                                           retries_exhausted, shutdown, panic
//	herald_events_retries_total{api}           write attempts after the first
//	herald_events_series_writes_total{api,result}  series counts written by the periodic,
//	                                           eviction and final passes (events.k8s.io/v1);
//	                                           result is ok or failed
//	herald_events_evicted_total{api}           events the events.k8s.io/v1 series cache
//	                                           forgot because it was full (see Cache size)
//	herald_events_log_dropped_total{api}       events the event log missed (they were
//	                                           still written)
//	herald_events_permission_missing{api,verb} gauge: 1 if the permission check found
//	                                           verb (create, patch) on the events of api
//	                                           missing, 0 if granted (see Permissions)
//	herald_events_permission_check_errors_total  permission checks an error cut short
//
// The fates do not overlap: once the queues are empty, the sum of
// herald_events_total over fate equals herald_events_recorded_total, and
// the sums of the dropped and failed families by reason equal their fates.
// An operator alerts on rate(herald_events_total{fate=~"dropped|failed"}),
// and on herald_events_permission_missing == 1.
//
// # Permissions
//
// A controller needs RBAC permission to create and patch events: in the
// API group "" for core/v1 recorders and for leader election (see Leader
// election), and in "events.k8s.io" for events.k8s.io/v1 recorders.
// Without it, the apiserver refuses every event with 403 Forbidden, and
// the events are lost. So that this is seen at once, not when someone
// looks for an event that is not there:
//
//   - When the manager starts the Provider, the Provider asks the
//     apiserver, with a SelfSubjectAccessReview for each of the four
//     permissions (which every authenticated identity may ask), whether
//     the identity it writes with has them, in all namespaces or in those
//     of WithPermissionCheck. Each permission missing is logged once, at
//     error level, with the rule to add and its kubebuilder marker, and is
//     a gauge at 1 in herald_events_permission_missing. The check runs
//     beside the manager's start, bounded by a timeout: it never holds
//     up or fails the start; an error of the review is logged once and
//     counted in herald_events_permission_check_errors_total.
//   - An event the apiserver refuses with 403 Forbidden is failed for
//     good, not retried (as client-go does with every refusal), and
//     counted as its own fate: FailedForbidden in Stats, reason forbidden
//     in herald_events_failed_total. One error line a burst (10 s) says
//     so, with the apiserver's message, which names the user, verb, API
//     group and namespace. (A terminating namespace's 403 is a
//     rejection, as before; an admission policy that denies events with
//     403 counts as forbidden too.)
//
// The rules, as kubebuilder markers (controller-gen makes a ClusterRole of
// them; with namespace=… a Role):
//
//	// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
//	// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
//
// # Leader election
//
// A manager with LeaderElection records "<identity> became leader" and
// "<identity> stopped leading", core/v1 events about its Lease, through a
// recorder of its own core/v1 broadcaster. It records "stopped leading"
// after its runnables have stopped, and then stops that broadcaster at
// once, with a context it has already cancelled, which drops what is
// queued; the events are in no Stats. (A manager stopped right after it
// was elected had stored neither event when mgr.Start returned:
// TestControllerRuntimeLeaderElectionEvents in examples/kube-apiserver.)
// controller-runtime v0.24 and v0.25 build that recorder into the lock in
// manager.New and offer no option to give it another
// (Options.EventBroadcaster, deprecated, reaches it, but the manager then
// leaves that broadcaster's shutdown to the user). The seam they offer is
// the lock itself: Options.LeaderElectionResourceLockInterface.
// NewLeaderLock builds the lock as the manager would, with a recorder
// that forwards to the Provider WithLeaderLock names; the Provider then
// records the leader election's events and flushes them, "stopped
// leading" included (see LeaderLock).
// Without it, leader election still needs the core/v1 rule.
//
// # Cache size
//
// Each broadcaster remembers the events it recorded, to fold repeats into
// a count: the core/v1 correlator in LRU caches (4096 entries, as in
// client-go), the events.k8s.io/v1 writer in its series cache (4096;
// client-go's has no bound, and no setting). A controller that records
// about more objects than that within a few minutes sees repeats
// created anew, with a count of 1, instead of counted: WithCacheSize sets
// both, and herald_events_evicted_total counts what the events.k8s.io/v1
// cache forgot.
//
// # Migration
//
// From the manager's own recorders to herald's: call New once, and take
// the recorders from the Provider instead of the manager. The events
// stored are the same (sources, reporting controller and instance,
// counts), checked against a real apiserver; what changes is that events
// recorded before the manager stops are in the apiserver when mgr.Start
// returns, events.k8s.io/v1 series with their final count, where the
// manager's own recorders drop what is queued. Add the RBAC rules of both
// APIs, and NewLeaderLock for leader election.
//
// From core/v1 to events.k8s.io/v1 (GetEventRecorderFor to
// GetEventRecorder, as controller-runtime moves its own recorders):
//
//   - Eventf takes a related object (or nil) and an action as well; the
//     apiserver requires an action and a reason (128 characters at most
//     each) and refuses a note over 1024 characters (counted as rejected).
//   - The stored event has eventTime, reportingController (the recorder's
//     name) and reportingInstance (name-host name), and no source, count
//     or first and last timestamps. Repeats are counted in a series
//     (series.count, series.lastObservedTime); a repeat is an event with
//     the same object (its resourceVersion and fieldPath included),
//     related object, type, reason and action, whatever its note: the
//     note stored is the first. core/v1 counts an event with the same
//     message; it also combines ten messages of one reason into one
//     event, and spam-filters an object's events beyond 25 at once, which
//     events.k8s.io/v1 does not.
//   - Both APIs are views of one resource: kubectl get events lists
//     events of both.
//   - The identity needs the events.k8s.io rule, and keeps the core/v1
//     one while any recorder, or leader election, still records core/v1
//     events.
//   - The series cache bounds how many series are counted at once (see
//     Cache size).
//
// # Versions
//
// The package builds against controller-runtime v0.24 (client-go v0.36)
// and v0.25 (client-go v0.37), and is tested with both against a real
// apiserver. With v0.24 a *Provider is a recorder.Provider, the interface
// controller-runtime hands recorders out through. In v0.25 the manager's
// GetEventRecorder returns controller-runtime's recorder.EventRecorder,
// which adds AnnotatedEventf; the Provider's returns client-go's
// events.EventRecorder, which a reconciler that keeps its recorder as an
// events.EventRecorder accepts unchanged. herald's recorder has
// AnnotatedEventf as well, so where a v0.25 recorder.EventRecorder is
// wanted, p.GetEventRecorder(name).(recorder.EventRecorder) holds.
//
// # Stability
//
// This module is at v0, released with herald's other modules at one
// version: a minor release may change its exported API, a patch release
// never does; every change is listed in the repository's CHANGELOG.md,
// and an identifier to be removed is marked Deprecated for one minor
// release first (README.md, "Stability").
package ctrlruntime
