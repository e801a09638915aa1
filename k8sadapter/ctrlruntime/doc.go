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
// the Provider: call Shutdown then.
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
//	                                           rejected, retries_exhausted, shutdown, panic
//	herald_events_retries_total{api}           write attempts after the first
//	herald_events_series_writes_total{api,result}  series counts written by the periodic,
//	                                           eviction and final passes (events.k8s.io/v1);
//	                                           result is ok or failed
//	herald_events_log_dropped_total{api}       events the event log missed (they were
//	                                           still written)
//
// The fates do not overlap: once the queues are empty, the sum of
// herald_events_total over fate equals herald_events_recorded_total, and
// the sums of the dropped and failed families by reason equal their fates.
// An operator alerts on rate(herald_events_total{fate=~"dropped|failed"}).
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
package ctrlruntime
