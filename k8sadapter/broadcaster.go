package k8sadapter

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/internal/lifecycle"
)

// Compile-time proof of the drop-in promise.
var _ record.EventBroadcaster = (*EventBroadcaster)(nil)

// EventBroadcaster receives core/v1 events from its recorders and sends
// them to sinks, loggers and handlers: a drop-in replacement for the value
// client-go's record.NewBroadcaster returns. Its zero value is not usable;
// create one with NewBroadcaster. It is safe for concurrent use.
type EventBroadcaster struct {
	cfg    config
	b      *broadcast.Broadcaster[*v1.Event]
	logger klog.Logger
	timers clock.Clock // pauses between sink attempts

	life    *lifecycle.Group // the watcher goroutines and the shutdown
	stopCtx func() bool      // releases the WithContext hook

	mu         sync.Mutex // guards the fields down to sinkQueues
	sinks      []*sinkStats
	watchers   []*broadcast.Watcher[*v1.Event] // non-sink watchers, for their drop counts
	sinkQueues []*broadcast.Watcher[*v1.Event]

	recorded, invalidObject, invalidType   atomic.Uint64
	droppedFull, droppedClosed, handlerPan atomic.Uint64
	fullLog                                burstLog
}

// NewBroadcaster returns a started EventBroadcaster, as client-go's
// record.NewBroadcaster does, configured by opts.
//
// It starts one goroutine, which distributes events to the watchers, and
// each Start… method starts one more, which runs that watcher's sink or
// handler. Shutdown (or cancelling the WithContext context) ends them all.
// No goroutine is ever started per event.
//
// Recorders never block: every watcher has a queue of WithQueueLength
// events, and a watcher that falls further behind misses the newest events
// (client-go's behaviour), which Stats counts and the log reports.
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
	e := &EventBroadcaster{
		cfg:    cfg,
		logger: klog.FromContext(ctx),
		timers: timers,
		life:   lifecycle.New(),
		b: broadcast.New[*v1.Event](broadcast.Options{
			QueueLength:         cfg.queueLength,
			IncomingQueueLength: cfg.queueLength,
			Full:                broadcast.DropNewest,
		}),
	}
	e.fullLog.every = 10 * time.Second
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
// The returned watch.Interface stops the watcher (events already queued for
// it are still handled); its ResultChan delivers nothing and is closed once
// the last event has been handled. After Shutdown began, StartEventWatcher
// logs and returns a watch that is already closed, as client-go does.
func (e *EventBroadcaster) StartEventWatcher(handler func(*v1.Event)) watch.Interface {
	if handler == nil {
		e.logger.Error(nil, "Unable start event watcher: nil handler (will not retry!)")
		return watch.NewEmptyWatch()
	}
	h, w := e.start(nil, func(ev *v1.Event) {
		defer func() {
			if r := recover(); r != nil {
				e.handlerPan.Add(1)
				e.logger.Error(nil, "Event handler panicked", "panic", r, "event", klog.KObj(ev))
			}
		}()
		handler(ev)
	})
	if w != nil {
		e.mu.Lock()
		e.watchers = append(e.watchers, w)
		e.mu.Unlock()
	}
	return h
}

// StartRecordingToSink writes every event to sink, with client-go's
// correlation (each sink has its own correlator), create-or-patch, retries
// and error handling; see the package documentation. The returned
// watch.Interface stops the recording once the events already queued for
// it are written.
func (e *EventBroadcaster) StartRecordingToSink(sink record.EventSink) watch.Interface {
	if sink == nil {
		e.logger.Error(nil, "Unable to start recording to a nil sink (will not retry!)")
		return watch.NewEmptyWatch()
	}
	s := &sinkWriter{e: e, sink: sink, corr: NewEventCorrelatorWithOptions(e.correlatorOptions())}
	h, w := e.start(&s.stats, s.record)
	if w != nil {
		e.mu.Lock()
		e.sinks = append(e.sinks, &s.stats)
		e.sinkQueues = append(e.sinkQueues, w)
		e.mu.Unlock()
	}
	return h
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

// start registers a watcher and starts the goroutine that runs handle for
// each of its events. It returns client-go's empty watch once shutdown has
// begun.
func (e *EventBroadcaster) start(stats *sinkStats, handle func(*v1.Event)) (watch.Interface, *broadcast.Watcher[*v1.Event]) {
	if !e.life.Add() {
		e.logger.Error(broadcast.ErrClosed, "Unable start event watcher (will not retry!)")
		return watch.NewEmptyWatch(), nil
	}
	w, err := e.b.Watch()
	if err != nil { // shutdown began meanwhile
		e.life.Done()
		e.logger.Error(err, "Unable start event watcher (will not retry!)")
		return watch.NewEmptyWatch(), nil
	}
	h := &Handle{w: w, result: make(chan watch.Event), sink: stats}
	go func() {
		defer e.life.Done()
		defer close(h.result)
		for ev := range w.All() {
			handle(ev)
		}
	}()
	return h, w
}

// Handle is the watch.Interface that StartEventWatcher, StartLogging,
// StartStructuredLogging and StartRecordingToSink return (type-assert to
// reach Stats). It is safe for concurrent use; only the Start… methods
// make one.
type Handle struct {
	w      *broadcast.Watcher[*v1.Event]
	result chan watch.Event
	sink   *sinkStats // nil unless StartRecordingToSink
}

// Stop ends the watcher: nothing more is queued for it; what was queued is
// still handled. It is idempotent.
func (h *Handle) Stop() { h.w.Stop() }

// ResultChan delivers nothing (the events go to the handler) and is closed
// once the watcher's goroutine has handled its last event.
func (h *Handle) ResultChan() <-chan watch.Event { return h.result }

// Stats returns this watcher's own counters: for a sink, the sink fields
// of Stats (Created, Patched, … DroppedSinkQueue); for a handler,
// DroppedWatcherQueue and nothing else.
func (h *Handle) Stats() Stats {
	var s Stats
	if h.sink == nil {
		s.DroppedWatcherQueue = h.w.Dropped()
		return s
	}
	h.sink.addTo(&s)
	s.DroppedSinkQueue = h.w.Dropped()
	return s
}

// Shutdown stops the broadcaster and flushes: every event recorded before
// it is handed to every started sink and handler (an event that fails gets
// no further attempt once shutdown began), within WithShutdownTimeout. It
// then returns with every goroutine of the broadcaster ended, except one
// stuck in a sink call that never returns. What the timeout cut short is
// counted in Stats.Abandoned and logged. Shutdown is idempotent.
func (e *EventBroadcaster) Shutdown() {
	lifecycle.ShutdownWithin(e.cfg.shutdownTimeout, e.ShutdownContext, e.logger)
}

// ShutdownContext is Shutdown bounded by ctx instead of the shutdown
// timeout. It returns nil once every event was handed on and every watcher
// goroutine has ended, or ctx.Err() if ctx ended first: the events still
// queued are then abandoned and counted, and the goroutines end as soon as
// their current sink call returns. A later call waits for them again. It
// panics on a nil ctx.
func (e *EventBroadcaster) ShutdownContext(ctx context.Context) error {
	if ctx == nil {
		panic("k8sadapter: nil Context")
	}
	if e.stopCtx != nil {
		e.stopCtx() // no longer needed; harmless if it already ran
	}
	// The watchers drop rather than block, so the flush returns at once:
	// every queued event is then in some watcher's queue.
	return e.life.Shutdown(ctx, e.b.Shutdown)
}

// Stats returns a snapshot of the broadcaster's counters.
func (e *EventBroadcaster) Stats() Stats {
	s := Stats{
		Recorded:         e.recorded.Load(),
		InvalidObject:    e.invalidObject.Load(),
		InvalidType:      e.invalidType.Load(),
		DroppedQueueFull: e.droppedFull.Load(),
		DroppedClosed:    e.droppedClosed.Load(),
		HandlerPanics:    e.handlerPan.Load(),
	}
	s.Queued = e.b.Stats().Published
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, st := range e.sinks {
		st.addTo(&s)
	}
	for _, w := range e.sinkQueues {
		s.DroppedSinkQueue += w.Dropped()
	}
	for _, w := range e.watchers {
		s.DroppedWatcherQueue += w.Dropped()
	}
	return s
}

// burstLog lets a repeated condition be logged once per interval, with the
// number of occurrences since the last line.
type burstLog struct {
	mu    sync.Mutex
	every time.Duration
	last  time.Time
	n     uint64
}

// note counts one occurrence at now and reports whether to log, with the
// count to report.
func (l *burstLog) note(now time.Time) (uint64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		return 0, false
	}
	n := l.n
	l.n, l.last = 0, now
	return n, true
}
