// Package recordtest is a test kit for code that records Kubernetes
// events: recorders that keep each event as a structured value, and helpers
// that wait for events and assert them.
//
// client-go's record.FakeRecorder sends each event as a line of text on a
// channel the test must size and drain; the object, annotations and
// timestamps are lost, and a test whose events come from another goroutine
// must synchronise by itself. A Recorder keeps the object's reference,
// related object, type, reason, action, message, annotations, times and
// count of each event; a test reads them when it likes, waits for the ones
// it needs, and gets, when an assertion fails, the list of what was
// recorded.
//
// # Usage
//
//	recorder := recordtest.New(recordtest.Options{})
//	c := NewController(recorder) // takes a record.EventRecorder
//	c.Reconcile(ctx, pod)
//
//	recorder.ExpectEvent(t, recordtest.Match{Type: v1.EventTypeWarning, Reason: "Failed", Name: pod.Name})
//	e, err := recorder.WaitFor(ctx, recordtest.Match{Reason: "Synced"}.Matches) // from another goroutine
//
// Recorder is a record.EventRecorderLogger (core/v1 events);
// Recorder.EventsRecorder returns an events.EventRecorderLogger (the
// events.k8s.io API) that keeps its events in the same Recorder. The
// events are built as client-go's recorders build them: the reference
// from the object and the scheme (client-go's tools/reference), the time
// from Options.Clock. A call client-go's recorder would not report (an
// object with no reference, an event type other than Normal or Warning)
// is kept too, with Event.Err saying why, and matches no Match that does
// not ask for it.
//
// # Correlation
//
// With Options.Correlate, a Recorder keeps what a herald broadcaster's
// sink (and so client-go's) would store in the apiserver instead of every
// call: it runs each core/v1 event through k8sadapter's EventCorrelator,
// on the calling goroutine, and applies the result as the sink would.
// Repeats fold into one event whose Count grows, ten distinct messages
// about one object and reason within ten minutes become one event whose
// message begins "(combined from similar events): ", and calls the spam
// filter refuses are not kept but counted (Recorder.Skipped). A test of
// correlated mode against client-go's record.EventCorrelator, on the same
// events and fake clock, checks that the events kept are the ones
// client-go's sink stores.
//
// # Migrating from FakeRecorder
//
// Recorder.Strings returns the lines FakeRecorder would have sent on its
// Events channel, so a test changes its constructor and reads a slice
// instead of a channel; Options.IncludeObject is FakeRecorder's
// IncludeObject. Wait replaces receiving n lines from the channel.
//
// # Concurrency
//
// Every method is safe for concurrent use. No goroutine is started, in
// any mode: each call records before it returns and wakes the goroutines
// blocked in Wait, WaitFor or AwaitEvent, which wait on a channel closed
// at each change, never in a polling loop.
package recordtest
