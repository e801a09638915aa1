package events

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientevents "k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/internal/lifecycle"
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
	b      *broadcast.Broadcaster[*eventsv1.Event]
	life   *lifecycle.Group
	logger klog.Logger

	mu        sync.Mutex // guards recording, writer, watchers
	recording bool
	writer    *writer
	watchers  []*broadcast.Watcher[*eventsv1.Event]

	recorded, invalidObject, invalidType, droppedFull, droppedClosed, handlerPanics atomic.Uint64
}

// NewBroadcaster returns a broadcaster that writes to sink once
// StartRecordingToSinkWithContext is called. Like client-go's, it takes
// the sink here; unlike client-go's, it starts no goroutine per event or
// per write: one goroutine distributes events, and each Start… call starts
// one more. Shutdown ends them all.
func NewBroadcaster(sink clientevents.EventSink, opts ...Option) *EventBroadcaster {
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return &EventBroadcaster{
		sink:   sink,
		cfg:    cfg,
		life:   lifecycle.New(),
		logger: klog.Background(),
		b: broadcast.New[*eventsv1.Event](broadcast.Options{
			QueueLength:         cfg.queueLength,
			IncomingQueueLength: cfg.queueLength,
			Full:                broadcast.DropNewest,
		}),
	}
}

// StartRecordingToSink is StartRecordingToSinkWithContext with a context
// that ends when stopCh is closed, as in client-go.
func (e *EventBroadcaster) StartRecordingToSink(stopCh <-chan struct{}) {
	if err := e.StartRecordingToSinkWithContext(wait.ContextForChannel(stopCh)); err != nil {
		e.logger.Error(err, "Failed to start recording to sink")
	}
}

// StartRecordingToSinkWithContext starts the writer: one goroutine that
// takes the events in order, keeps the series, writes to the sink (create
// for a first occurrence, patch with the series for the second, nothing for
// later ones until the periodic refresh and finish passes), and ends when
// ctx ends (what is queued is abandoned, counted) or at Shutdown (what is
// queued is written and every open series gets its final count). The
// logger comes from ctx.
func (e *EventBroadcaster) StartRecordingToSinkWithContext(ctx context.Context) error {
	if e.sink == nil {
		return errors.New("events: nil sink")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.recording {
		return ErrRecording
	}
	if !e.life.Add() {
		return broadcast.ErrClosed
	}
	w, err := e.b.Watch()
	if err != nil {
		e.life.Done()
		return err
	}
	e.recording = true
	e.logger = klog.FromContext(ctx)
	e.writer = newWriter(e, w)
	go func() {
		defer e.life.Done()
		e.writer.run(ctx)
	}()
	return nil
}

// StartEventWatcher calls handler with every event, in order, on a
// goroutine of its own, and returns a function that stops it. A handler
// that panics is logged and counted. After Shutdown began it returns
// broadcast.ErrClosed, as client-go returns its error.
func (e *EventBroadcaster) StartEventWatcher(handler func(event runtime.Object)) (func(), error) {
	if handler == nil {
		return nil, errors.New("events: nil handler")
	}
	if !e.life.Add() {
		return nil, broadcast.ErrClosed
	}
	w, err := e.b.Watch()
	if err != nil {
		e.life.Done()
		return nil, err
	}
	e.mu.Lock()
	e.watchers = append(e.watchers, w)
	e.mu.Unlock()
	go func() {
		defer e.life.Done()
		for ev := range w.All() {
			e.handle(handler, ev)
		}
	}()
	return w.Stop, nil
}

func (e *EventBroadcaster) handle(handler func(runtime.Object), ev *eventsv1.Event) {
	defer func() {
		if p := recover(); p != nil {
			e.handlerPanics.Add(1)
			e.logger.Error(nil, "Event handler panicked", "panic", p, "event", klog.KObj(ev))
		}
	}()
	handler(ev)
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

// StartStructuredLogging is StartLogging at the given verbosity of the
// broadcaster's logger. It returns a no-op function if it cannot start.
func (e *EventBroadcaster) StartStructuredLogging(verbosity klog.Level) func() {
	logger := e.logger.V(int(verbosity))
	stop, err := e.StartLogging(logger)
	if err != nil {
		e.logger.Error(err, "Failed to start event watcher")
		return func() {}
	}
	return stop
}

// NewRecorder returns a recorder for reportingController; its reporting
// instance is reportingController + "-" + the host name, as in client-go.
func (e *EventBroadcaster) NewRecorder(scheme *runtime.Scheme, reportingController string) clientevents.EventRecorderLogger {
	hostname, _ := os.Hostname()
	return &Recorder{e: e, scheme: scheme, controller: reportingController,
		instance: reportingController + "-" + hostname, logger: e.logger}
}

// Shutdown stops the broadcaster: every event recorded before it is
// written (one attempt each once shutdown began), every open series gets
// its final count, within the shutdown timeout; then every goroutine has
// ended, except one stuck in a sink call that never returns.
func (e *EventBroadcaster) Shutdown() {
	lifecycle.ShutdownWithin(e.cfg.shutdownTimeout, e.ShutdownContext, e.logger)
}

// ShutdownContext is Shutdown bounded by ctx. It returns ctx.Err() if ctx
// ended first; what was left is abandoned and counted. It panics on a nil
// ctx.
func (e *EventBroadcaster) ShutdownContext(ctx context.Context) error {
	if ctx == nil {
		panic("events: nil Context")
	}
	return e.life.Shutdown(ctx, e.b.Shutdown)
}

// Stats returns a snapshot of the broadcaster's counters.
func (e *EventBroadcaster) Stats() Stats {
	s := Stats{
		Recorded:         e.recorded.Load(),
		Queued:           e.b.Stats().Published,
		InvalidObject:    e.invalidObject.Load(),
		InvalidType:      e.invalidType.Load(),
		DroppedQueueFull: e.droppedFull.Load(),
		DroppedClosed:    e.droppedClosed.Load(),
		HandlerPanics:    e.handlerPanics.Load(),
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.writer != nil {
		e.writer.addTo(&s)
	}
	for _, w := range e.watchers {
		s.DroppedWatcherQueue += w.Dropped()
	}
	return s
}
