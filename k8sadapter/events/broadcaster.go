package events

import (
	"context"
	"errors"
	"os"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientevents "k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/k8sadapter/internal/pipeline"
)

// Compile-time proof of the drop-in promise.
var _ clientevents.EventBroadcaster = (*EventBroadcaster)(nil)

// ErrRecording is returned by StartRecordingToSinkWithContext when the
// broadcaster already records to its sink: its series cache serves one
// writer.
var ErrRecording = errors.New("events: already recording to the sink")

// EventBroadcaster receives events.k8s.io/v1 events from its recorders and
// writes them to its sink, folding repeats into series: a drop-in for the
// value client-go's events.NewBroadcaster returns. Its zero value is not
// usable; create one with NewBroadcaster. It is safe for concurrent use.
type EventBroadcaster struct {
	sink   clientevents.EventSink
	cfg    config
	p      *pipeline.Pipeline[*eventsv1.Event, key, folded, writerCounts]
	wr     *writer
	logger klog.Logger // klog's global logger, as client-go's; never changes
}

// NewBroadcaster returns a broadcaster that writes to sink once
// StartRecordingToSinkWithContext is called; the events recorded before
// wait in the writer's queue (client-go drops them). Like client-go's, it
// takes the sink here; unlike client-go's, it starts no goroutine per event
// or per write: one goroutine distributes events, and each Start… call
// starts one more. Shutdown ends them all.
func NewBroadcaster(sink clientevents.EventSink, opts ...Option) *EventBroadcaster {
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	logger := klog.Background()
	if cfg.logger != nil {
		logger = *cfg.logger
	}
	e := &EventBroadcaster{
		sink: sink,
		cfg:  cfg,
		p: pipeline.New(pipeline.Options{Name: "events", QueueLength: cfg.QueueLength, Clock: cfg.clock, Logger: logger},
			adapter{sleep: cfg.Sleep}),
		logger: logger,
	}
	e.wr = newWriter(e)
	return e
}

// StartRecordingToSink is StartRecordingToSinkWithContext with a context
// that ends when stopCh is closed, as in client-go.
func (e *EventBroadcaster) StartRecordingToSink(stopCh <-chan struct{}) {
	if err := e.StartRecordingToSinkWithContext(wait.ContextForChannel(stopCh)); err != nil {
		e.logger.Error(err, "Failed to start recording to sink")
	}
}

// StartRecordingToSinkWithContext starts the writer: one goroutine that
// takes the events in order, from the first recorded after NewBroadcaster,
// keeps the series, and writes to the sink (create for a first
// occurrence, patch with the series for the second, nothing for later
// ones until the periodic refresh and finish passes). It logs to the
// logger of ctx.
//
// The writer ends at Shutdown, after writing what is queued and every
// open series' final count, or when ctx ends. Then what is queued, and
// what is recorded later, waits in its queue (up to WithQueueLength
// series, repeats folded; more are dropped and counted) for the next
// call, which starts recording again with the same series, or for
// Shutdown, which counts it as Abandoned and writes the open series'
// final counts (within its context). While the writer runs, a call returns ErrRecording; after
// Shutdown began, broadcast.ErrClosed; a nil ctx or sink is an error.
func (e *EventBroadcaster) StartRecordingToSinkWithContext(ctx context.Context) error {
	if ctx == nil {
		return errors.New("events: nil Context")
	}
	if e.sink == nil {
		return errors.New("events: nil sink")
	}
	logger := klog.FromContext(ctx)
	err := e.wr.c.Go(logger, e.wr.run(ctx, logger))
	if errors.Is(err, pipeline.ErrRunning) {
		return ErrRecording
	}
	return err
}

// StartEventWatcher calls handler with every event, in order, on a
// goroutine of its own, and returns a function that stops it (events
// recorded before the stop are still handled). A handler that panics is
// logged and counted. After Shutdown began it returns broadcast.ErrClosed,
// as client-go returns its error.
func (e *EventBroadcaster) StartEventWatcher(handler func(event runtime.Object)) (func(), error) {
	if handler == nil {
		return nil, errors.New("events: nil handler")
	}
	c, err := e.p.StartHandler(e.logger, func(ev *eventsv1.Event) { handler(ev) }, nil)
	if err != nil {
		return nil, err
	}
	return c.Stop, nil
}

// StartLogging logs every event to logger as "Event occurred", with
// client-go's keys (object, kind, apiVersion, type, reason, action, note).
func (e *EventBroadcaster) StartLogging(logger klog.Logger) (func(), error) {
	return e.StartEventWatcher(func(obj runtime.Object) {
		event := obj.(*eventsv1.Event) // the only type queued
		logger.Info("Event occurred", "object", klog.KRef(event.Regarding.Namespace, event.Regarding.Name),
			"kind", event.Regarding.Kind, "apiVersion", event.Regarding.APIVersion, "type", event.Type,
			"reason", event.Reason, "action", event.Action, "note", event.Note)
	})
}

// StartStructuredLogging is StartLogging at the given verbosity of klog's
// global logger. It returns a no-op function if it cannot start.
func (e *EventBroadcaster) StartStructuredLogging(verbosity klog.Level) func() {
	stop, err := e.StartLogging(e.logger.V(int(verbosity)))
	if err != nil {
		e.logger.Error(err, "Failed to start event watcher")
		return func() {}
	}
	return stop
}

// NewRecorder returns a recorder for reportingController; its reporting
// instance is reportingController + "-" + the host name, as in client-go.
// It logs to klog's global logger unless given another with WithLogger.
func (e *EventBroadcaster) NewRecorder(scheme *runtime.Scheme, reportingController string) clientevents.EventRecorderLogger {
	hostname, _ := os.Hostname()
	return &Recorder{e: e, scheme: scheme, controller: reportingController,
		instance: reportingController + "-" + hostname, logger: e.logger}
}

// Shutdown stops the broadcaster: every event recorded before it is
// written (one attempt each once shutdown began), every open series gets
// its final count, within the shutdown timeout; then every goroutine has
// ended. If the writer was not recording, what waited in its queue is
// counted as Abandoned. If the timeout passes first, Shutdown returns
// then: what waits in the writer's queue is abandoned, counted in
// Stats.Abandoned and logged with its number; a goroutine still in a sink
// or handler call ends as soon as the call returns, abandoning the rest
// of what it holds (Abandoned, HandlerAbandoned; open series whose final
// count is left unwritten, SeriesUnwritten). It must not be called from a
// handler or the sink, which it waits for.
func (e *EventBroadcaster) Shutdown() {
	pipeline.ShutdownWithin(e.cfg.ShutdownTimeout, e.ShutdownContext)
}

// ShutdownContext is Shutdown bounded by ctx. It returns ctx.Err() if ctx
// ended first; what was left is abandoned and counted as Shutdown's
// timeout abandons it. A later call returns broadcast.ErrClosed (not nil:
// events were abandoned). If the recording context had ended before,
// the open series' final counts are written on the caller's goroutine,
// each sink call given ctx: a sink that ignores its context holds
// ShutdownContext as long as it hangs. It panics on a nil ctx.
func (e *EventBroadcaster) ShutdownContext(ctx context.Context) error {
	err := e.p.Shutdown(ctx)
	// Nothing starts the writer any more: what is left in its queue
	// (closed now) is abandoned, and the open series of a recording whose
	// context ended first get their final count, here if it is not
	// running, else when its context ends or its hung sink call returns.
	e.wr.c.Drain(func() { e.wr.drain(ctx) })
	if err == nil {
		err = ctx.Err() // it ended while the final counts were written
	}
	return err
}

// Stats returns a snapshot of the broadcaster's counters.
func (e *EventBroadcaster) Stats() Stats {
	return stats(e.p.RecorderCounts(), e.p.Sinks(), e.p.Handlers())
}

// Flush waits until the events recorded before the call are handled, and
// returns nil; or ctx.Err() if ctx ends first (a hung sink call, say). It
// is what a controller's unit test needs between recording an event and
// looking for it in a fake clientset: no polling, no sleeping.
//
// Handled means: by the writer, if it is recording, and by each handler
// and logger started before the call. The writer has then created,
// patched or counted each event in its series, or given up on it after its
// retries (paused on the WithClock clock: a test with a fake clock steps
// it while Flush waits instead of sleeping; HasWaiters is no sign of a
// pause here, as the writer's periodic passes wait on the clock too), or
// lost it to a full queue, so that each is in one
// of the fates of Stats. Events the writer will take only once recording
// starts (again) are not waited for. An event recorded while Flush runs
// may or may not be handled when it returns.
//
// After Shutdown, which has handled everything, Flush returns nil at
// once, unless a sink call it abandoned still hangs. It panics on a nil
// ctx.
func (e *EventBroadcaster) Flush(ctx context.Context) error { return e.p.Flush(ctx) }
