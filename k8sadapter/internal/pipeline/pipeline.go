// Package pipeline is the path a Kubernetes event takes in herald, from a
// recorder to the sinks, shared by the two adapters (core/v1 and
// events.k8s.io/v1): the recorder side (reference, type check, queues
// that never block, with their counters), one folding queue per sink
// (Fold), one broadcaster and its watchers for the handlers and loggers,
// the goroutine that consumes each queue and its counters (Consumer), the
// retry-and-classify write to a sink (Writer), the drop-log policy
// (BurstInterval), Flush and Shutdown.
//
// Publish hands an event, on the recorder's goroutine, to the Fold of
// every sink started (where a repeat folds into the event of its kind
// already waiting, so that a burst of repeats takes no room) and, if any
// handler or logger is started, to the broadcaster, whose watchers get
// every event.
//
// What is client-go's in each adapter (how an event is built and
// correlated, which sink methods are called) stays in the adapter; what
// the pipeline needs of it (how events fold in a sink's queue, how its
// sink counters add up, how errors are classified, how retries are
// spaced) is one Adapter, given to New.
package pipeline

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/internal/burst"
	"github.com/heraldgo/herald/internal/lifecycle"
	"github.com/heraldgo/herald/k8sadapter/internal/kube"
)

// Event is what a pipeline carries: a pointer to a Kubernetes event.
type Event interface {
	comparable
	klog.KMetadata
}

// Options configure a Pipeline.
type Options struct {
	// Name is the adapter's package name, for the messages of panics.
	Name string
	// QueueLength is the capacity of the queue between recorders and
	// watchers, and of each watcher's queue (at least 1).
	QueueLength int
	// Clock times the drop-log bursts.
	Clock clock.PassiveClock
	// Logger receives the pipeline's own lines.
	Logger klog.Logger
}

// Adapter is what one of herald's Kubernetes adapters gives its
// pipeline when it is built, for its API: how events fold in a sink's
// queue (Folding), how a sink's counters C add up, and client-go's rules
// for the errors and retries of a sink's writes (Writer). Its methods are
// called on any goroutine and must be safe for concurrent use.
type Adapter[E Event, K comparable, P any, C any] interface {
	Folding[E, K, P]
	// AddCounts adds the counters o of a sink to c.
	AddCounts(c *C, o C)
	// Classify says what err, returned when writing ev, means; quiet
	// lowers its log line to V(5), for refusals that are expected.
	Classify(err error, ev E) (c Class, quiet bool)
	// Pause returns the pause after the given number of failed attempts.
	Pause(failures int) time.Duration
}

// Pipeline is one adapter's queues and what hangs on them: events of type
// E, the sinks' queues folding under keys K and keeping P of what folds,
// the sinks' counters C. Its zero value is not usable; create one with
// New. It is safe for concurrent use.
type Pipeline[E Event, K comparable, P any, C any] struct {
	hub[E]
	name     string
	adapter  Adapter[E, K, P, C]
	handlers *set[E, HandlerCounts]
	sinks    *set[E, C]

	recorded, queued, invalidObject, invalidType, droppedClosed atomic.Uint64
	queueFullLog, closedLog                                     burst.Burst
	stamps                                                      stamper // see Stamp

	// gate orders Publish, which holds it for reading, against what
	// changes where events go: a sink's Fold added or removed, the
	// shutdown. An event is in every Fold of the sinks started before its
	// Publish, and in none of those stopped before it.
	gate   sync.RWMutex
	closed bool                    // the shutdown began; guarded by gate
	folds  []sinkQueue[E, K, P, C] // the sinks' Folds; guarded by gate
}

// hub is what every consumer of a pipeline shares, whatever its queue:
// the broadcaster of the handlers, the goroutines' lifecycle, the
// consumers Flush and Shutdown wait for.
type hub[E Event] struct {
	b       *broadcast.Broadcaster[E] // for the handlers
	life    *lifecycle.Group
	clock   clock.PassiveClock
	logger  klog.Logger
	watched atomic.Int64 // handlers whose watcher may be registered
	// refused counts the events the broadcaster's incoming queue refused:
	// each handler started then missed it (see Consumer.Tally).
	refused atomic.Uint64

	mu        sync.Mutex // guards consumers
	consumers []flushable
}

// sinkQueue is a sink's Fold, and its consumer, whose drop log reports
// what the Fold refuses for want of room.
type sinkQueue[E Event, K comparable, P any, C any] struct {
	q *Fold[E, K, P]
	c *Consumer[E, C]
}

// flushable is a consumer, as Flush and Shutdown see it.
type flushable interface {
	await(ctx context.Context) error
	reportRest()
	abandonQueued() uint64
}

// New returns a running Pipeline for the adapter a. It starts the
// broadcaster's distributor goroutine; Shutdown ends it.
func New[E Event, K comparable, P any, C any](o Options, a Adapter[E, K, P, C]) *Pipeline[E, K, P, C] {
	p := &Pipeline[E, K, P, C]{
		hub: hub[E]{
			b: broadcast.New[E](broadcast.Options{
				QueueLength:         o.QueueLength,
				IncomingQueueLength: o.QueueLength,
				// A recorder never blocks, and one slow watcher never holds
				// another: a full watcher misses the newest events, counted.
				Full: broadcast.DropNewest,
			}),
			life:   lifecycle.New(),
			clock:  o.Clock,
			logger: o.Logger,
		},
		name:     o.Name,
		adapter:  a,
		handlers: newSet[E](func(c *HandlerCounts, o HandlerCounts) { c.Panics += o.Panics; c.Abandoned += o.Abandoned }),
		sinks:    newSet[E](a.AddCounts),
	}
	return p
}

// Stopping is closed once the shutdown has begun.
func (p *Pipeline[E, K, P, C]) Stopping() <-chan struct{} { return p.life.Stopping().Done() }

// Aborting is done once a shutdown's deadline has passed: what is still
// queued is then abandoned, and no sink call starts. A sink call that
// takes a context is given one that ends with it.
func (p *Pipeline[E, K, P, C]) Aborting() context.Context { return p.life.Aborting() }

// Accept counts one recorded event and checks what every event needs: a
// reference to its object, and the type Normal or Warning. It returns the
// reference, or nil after counting and logging the refusal as client-go
// logs it.
func (p *Pipeline[E, K, P, C]) Accept(logger klog.Logger, scheme *runtime.Scheme, object runtime.Object, eventtype, reason, message string) *v1.ObjectReference {
	p.recorded.Add(1)
	ref, err := kube.Reference(scheme, object)
	if err != nil {
		p.invalidObject.Add(1)
		logger.Error(err, "Could not construct reference, will not report event", "object", object, "eventType", eventtype, "reason", reason, "message", message)
		return nil
	}
	if !util.ValidateEventType(eventtype) {
		p.invalidType.Add(1)
		logger.Error(nil, "Unsupported event type", "eventType", eventtype)
		return nil
	}
	return ref
}

// Publish hands an accepted event, without blocking, to the Fold of every
// sink started (each Fold counts what it folds or refuses; a refusal for
// want of room is logged here, one line per burst, in the drop log of the
// sink's consumer) and, if a handler or logger is started, to the
// broadcaster. An event recorded
// once the shutdown has begun goes nowhere: it is counted as
// DroppedClosed and logged, one line per burst. An event the
// broadcaster's full incoming queue refuses reaches no handler, and each
// handler started counts it as dropped (Consumer.Tally); every sink got
// it. The refusal is logged, one line per burst.
func (p *Pipeline[E, K, P, C]) Publish(logger klog.Logger, ev E) {
	p.gate.RLock()
	if p.closed {
		p.gate.RUnlock()
		p.droppedClosed.Add(1)
		if n, due := p.closedLog.Add(p.clock.Now(), 1); due {
			logger.Error(broadcast.ErrClosed, "Unable to record event (will not retry!)", "event", klog.KObj(ev),
				"droppedSinceLastReport", n, "reportedEvery", BurstInterval)
		}
		return
	}
	var lines [2]dropLine // room for the usual few, so that none allocates
	due := p.offer(ev, lines[:0])
	sent := true
	if p.watched.Load() > 0 {
		// Closed only after the gate closed: the error cannot happen here.
		sent, _ = p.b.TryPublish(ev)
	}
	p.queued.Add(1)
	var n uint64
	refusedDue := false
	if !sent {
		// Counted before the gate opens, so that Shutdown, which closes
		// it, finds the refusal in queueFullLog's rest; logged after.
		p.refused.Add(1)
		n, refusedDue = p.queueFullLog.Add(p.clock.Now(), 1)
	}
	p.gate.RUnlock()
	if refusedDue {
		logger.Error(nil, "Unable to hand event to the event handlers: too many queued events, dropped event", "event", klog.KObj(ev),
			"droppedSinceLastReport", n, "reportedEvery", BurstInterval)
	}
	for _, l := range due { // the gate open: a slow logger holds no Shutdown
		l.log.logDrops(l.logger, l.n)
	}
}

// offer offers ev to every sink's Fold. A Fold that refuses ev for want
// of room counts it in its consumer's drop log, here, on the recorder's
// goroutine, while the sink's own may be stuck in a call: the lines that
// are due are appended to due and returned, for Publish to write once the
// gate is open. The caller holds the gate for reading.
func (p *Pipeline[E, K, P, C]) offer(ev E, due []dropLine) []dropLine {
	for _, s := range p.folds {
		if s.q.Offer(ev) != Full {
			continue
		}
		if logger, n, ok := s.c.countDrop(p.clock.Now()); ok {
			due = append(due, dropLine{log: s.c, logger: logger, n: n})
		}
	}
	return due
}

// PublishFolded is Publish for an event of key k that the recorder has
// not built, which fold may fold into the newest waiting entry of k in
// the queue of the one sink started (see Fold.tryFold). It reports
// whether it did; the event is then queued, and counted as Publish counts
// it. If a handler or logger is started (it is owed the event itself), if
// there is not exactly one sink, or if the shutdown has begun, it does
// nothing and returns false: the caller builds the event and Publishes
// it.
func (p *Pipeline[E, K, P, C]) PublishFolded(k K, fold func(w *Entry[E, K, P]) bool) bool {
	if p.watched.Load() > 0 {
		return false
	}
	p.gate.RLock()
	defer p.gate.RUnlock()
	if p.closed || len(p.folds) != 1 || !p.folds[0].q.tryFold(k, fold) {
		return false
	}
	p.queued.Add(1)
	return true
}

// Stamp is stamper.stamp, for the times the adapters name events from,
// the recorders' and the correlators' alike.
func (p *Pipeline[E, K, P, C]) Stamp(t time.Time) time.Time { return p.stamps.stamp(t) }

// RecorderCounts are the recorder side's counters. Every recorded event
// is counted in Recorded and in exactly one other.
type RecorderCounts struct {
	Recorded, Queued, InvalidObject, InvalidType, DroppedClosed uint64
}

// RecorderCounts returns a snapshot of the recorder side's counters.
func (p *Pipeline[E, K, P, C]) RecorderCounts() RecorderCounts {
	// The fates first: an event being recorded now may be in Recorded and
	// not yet in its fate, never the other way round.
	r := RecorderCounts{
		Queued:        p.queued.Load(),
		InvalidObject: p.invalidObject.Load(),
		InvalidType:   p.invalidType.Load(),
		DroppedClosed: p.droppedClosed.Load(),
	}
	r.Recorded = p.recorded.Load()
	return r
}

// Sinks returns the tally of every sink started so far.
func (p *Pipeline[E, K, P, C]) Sinks() Tally[C] { return p.sinks.sum() }
