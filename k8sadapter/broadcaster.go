package k8sadapter

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/heraldgo/herald/k8sadapter/internal/pipeline"
)

// Compile-time proof of the drop-in promise.
var _ record.EventBroadcaster = (*EventBroadcaster)(nil)

// EventBroadcaster receives core/v1 events from its recorders and sends
// them to sinks, loggers and handlers: a drop-in replacement for the value
// client-go's record.NewBroadcaster returns. Its zero value is not usable;
// create one with NewBroadcaster. It is safe for concurrent use.
type EventBroadcaster struct {
	cfg     config
	p       *pipeline.Pipeline[*v1.Event, bucket, occurrences, sinkCounts]
	logger  klog.Logger
	timers  clock.Clock // pauses between sink attempts
	stopCtx func() bool // releases the WithContext hook
}

// NewBroadcaster returns a started EventBroadcaster, as client-go's
// record.NewBroadcaster does, configured by opts.
//
// It starts one goroutine, which distributes events to the watchers, and
// each Start… method starts one more, which runs that watcher's sink or
// handler. Shutdown (or cancelling the WithContext context) ends them all.
// No goroutine is ever started per event.
//
// Recorders never block: every sink and handler has a queue of
// WithQueueLength events, and one that falls further behind misses the
// newest events (client-go's behaviour), which Stats counts and the log
// reports once per burst. A sink's queue folds repeats: see the package
// documentation.
func NewBroadcaster(opts ...BroadcasterOption) *EventBroadcaster {
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	ctx := cfg.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	timers, ok := cfg.clock.(clock.Clock)
	if !ok {
		timers = clock.RealClock{}
	}
	logger := klog.FromContext(ctx)
	e := &EventBroadcaster{
		cfg: cfg,
		p: pipeline.New(pipeline.Options{Name: "k8sadapter", QueueLength: cfg.QueueLength, Clock: cfg.clock, Logger: logger},
			newAdapter(cfg)),
		logger: logger,
		timers: timers,
	}
	if ctx.Done() != nil {
		// No goroutine waits for ctx: AfterFunc starts one only once ctx
		// is done, to run Shutdown.
		e.stopCtx = context.AfterFunc(ctx, e.Shutdown)
	}
	return e
}

// StartEventWatcher calls handler for every event, one at a time, in the
// order they were recorded, on a goroutine of its own. handler receives the
// event every watcher shares and must not modify it. A handler that panics
// is logged and counted, and the next event is handled as usual.
//
// The returned watch.Interface stops the watcher (events recorded before
// Stop are still handled); its ResultChan delivers nothing and is closed
// once the last event has been handled. After Shutdown began,
// StartEventWatcher logs and returns a watch that is already closed, as
// client-go does.
func (e *EventBroadcaster) StartEventWatcher(handler func(*v1.Event)) watch.Interface {
	if handler == nil {
		e.logger.Error(nil, "Unable start event watcher: nil handler (will not retry!)")
		return watch.NewEmptyWatch()
	}
	result := make(chan watch.Event)
	c, err := e.p.StartHandler(e.logger, handler, func() { close(result) })
	if err != nil {
		e.logger.Error(err, "Unable start event watcher (will not retry!)")
		return watch.NewEmptyWatch()
	}
	return &Handle{stop: c.Stop, result: result, stats: func() Stats {
		var s Stats
		t := c.Tally()
		s.addHandlers(t)
		s.Queued = t.Queued
		return s
	}}
}

// StartRecordingToSink writes every event to sink, with client-go's
// correlation (each sink has its own correlator), create-or-patch, retries
// and error handling; see the package documentation. The returned
// watch.Interface stops the recording once the events recorded before
// Stop are written.
func (e *EventBroadcaster) StartRecordingToSink(sink record.EventSink) watch.Interface {
	if sink == nil {
		e.logger.Error(nil, "Unable to start recording to a nil sink (will not retry!)")
		return watch.NewEmptyWatch()
	}
	s := e.newSinkWriter(sink)
	result := make(chan watch.Event)
	c, err := e.p.StartSink(s.q, "sink", e.logger, func(c *pipeline.Consumer[*v1.Event, sinkCounts]) {
		defer close(result)
		s.run(c)
	})
	if err != nil {
		e.logger.Error(err, "Unable start event watcher (will not retry!)")
		return watch.NewEmptyWatch()
	}
	return &Handle{stop: c.Stop, result: result, stats: func() Stats { return sinkStats(c.Tally()) }}
}

// correlatorOptions are the options each sink's correlator gets: the
// WithCorrelatorOptions ones, on the WithClock clock unless they name one.
func (e *EventBroadcaster) correlatorOptions() record.CorrelatorOptions {
	o := e.cfg.correlator
	if o.Clock == nil {
		o.Clock = e.cfg.clock
	}
	return o
}

// StartLogging calls logf for every event with client-go's format:
//
//	Event(v1.ObjectReference{…}): type: 'Normal' reason: 'Started' message
func (e *EventBroadcaster) StartLogging(logf func(format string, args ...interface{})) watch.Interface {
	if logf == nil {
		e.logger.Error(nil, "Unable to start logging to a nil function (will not retry!)")
		return watch.NewEmptyWatch()
	}
	return e.StartEventWatcher(func(ev *v1.Event) {
		logf("Event(%#v): type: '%v' reason: '%v' %v", ev.InvolvedObject, ev.Type, ev.Reason, ev.Message)
	})
}

// StartStructuredLogging logs every event as "Event occurred" at the given
// verbosity, with client-go's keys (object, fieldPath, kind, apiVersion,
// type, reason, message), to the logger of the WithContext context or klog's
// global one.
func (e *EventBroadcaster) StartStructuredLogging(verbosity klog.Level) watch.Interface {
	loggerV := e.logger.V(int(verbosity))
	return e.StartEventWatcher(func(ev *v1.Event) {
		loggerV.Info("Event occurred", "object", klog.KRef(ev.InvolvedObject.Namespace, ev.InvolvedObject.Name),
			"fieldPath", ev.InvolvedObject.FieldPath, "kind", ev.InvolvedObject.Kind,
			"apiVersion", ev.InvolvedObject.APIVersion, "type", ev.Type, "reason", ev.Reason, "message", ev.Message)
	})
}

// NewRecorder returns a recorder that stamps events with source and hands
// them to this broadcaster without blocking.
func (e *EventBroadcaster) NewRecorder(scheme *runtime.Scheme, source v1.EventSource) record.EventRecorderLogger {
	return &Recorder{e: e, scheme: scheme, source: source, logger: e.logger}
}

// Handle is the watch.Interface that StartEventWatcher, StartLogging,
// StartStructuredLogging and StartRecordingToSink return (type-assert to
// reach Stats). It is safe for concurrent use; only the Start… methods
// make one.
type Handle struct {
	stop   func()
	result chan watch.Event
	stats  func() Stats
}

// Stop ends the watcher at the current queue position: every event
// recorded before Stop is still handled (written, for a sink), none
// recorded after Stop returns is. It is idempotent.
func (h *Handle) Stop() { h.stop() }

// ResultChan delivers nothing (the events go to the handler) and is closed
// once the watcher's goroutine has handled its last event.
func (h *Handle) ResultChan() <-chan watch.Event { return h.result }

// Stats returns this watcher's own counters, with Queued the events it was
// owed (see Stats for the equation they satisfy): for a sink, the sink
// fields of Stats (Created, Patched, … DroppedSinkQueue); for a handler,
// Handled, DroppedWatcherQueue and HandlerPanics.
func (h *Handle) Stats() Stats { return h.stats() }

// Flush returns once every event recorded before the call has been
// handled by every sink, handler and logger started before the call:
// written (created or patched), skipped by the spam filter, given up on
// (after its retries, whose pauses run on the WithClock clock: a test
// with a fake clock steps it while Flush waits, as HasWaiters reports a
// pause, instead of sleeping through them), or dropped because its queue was
// full. Every such event is then in one of the fates of Stats. Events
// recorded concurrently with Flush may or may not be handled yet. It is
// the helper a controller's unit test wants: record, Flush, assert.
//
// Flush returns ctx.Err() if ctx ends first: a sink call that hangs holds
// Flush no longer than ctx. After Shutdown, which handles every event
// already, Flush returns nil at once, unless a sink call still hangs. It
// panics on a nil ctx.
func (e *EventBroadcaster) Flush(ctx context.Context) error { return e.p.Flush(ctx) }

// Shutdown stops the broadcaster and flushes: every event recorded before
// it is handed to every started sink and handler (an event that fails gets
// no further attempt once shutdown began), within WithShutdownTimeout. It
// then returns with every goroutine of the broadcaster ended. If the
// timeout passes first, it returns then: what waits in the sinks' queues
// is abandoned, counted in Stats.Abandoned, and logged with its number;
// a goroutine still in a sink or handler call ends as soon as the call
// returns, abandoning the rest of what it holds (Abandoned,
// HandlerAbandoned), without handing it on. Shutdown is idempotent. It
// must not be called from a handler or a sink, which it waits for (see
// the package documentation).
func (e *EventBroadcaster) Shutdown() {
	pipeline.ShutdownWithin(e.cfg.ShutdownTimeout, e.ShutdownContext)
}

// ShutdownContext is Shutdown bounded by ctx instead of the shutdown
// timeout. It returns nil once every event was handed on and every watcher
// goroutine has ended, or ctx.Err() if ctx ended first: the events still
// queued are then abandoned as Shutdown's timeout abandons them. A later
// call waits for the goroutines again, and returns broadcast.ErrClosed
// (not nil: events were abandoned). It panics on a nil ctx.
func (e *EventBroadcaster) ShutdownContext(ctx context.Context) error {
	if e.stopCtx != nil {
		e.stopCtx() // no longer needed; harmless if it already ran
	}
	return e.p.Shutdown(ctx)
}

// Stats returns a snapshot of the broadcaster's counters.
func (e *EventBroadcaster) Stats() Stats {
	s := sinkStats(e.p.Sinks())
	s.addHandlers(e.p.Handlers())
	r := e.p.RecorderCounts()
	s.Recorded, s.Queued, s.InvalidObject, s.InvalidType = r.Recorded, r.Queued, r.InvalidObject, r.InvalidType
	s.DroppedClosed = r.DroppedClosed
	return s
}
