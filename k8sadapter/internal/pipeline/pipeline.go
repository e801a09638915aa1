// Package pipeline is the path a Kubernetes event takes in herald, from a
// recorder to the sinks, shared by the two adapters (core/v1 and
// events.k8s.io/v1): the recorder side (reference, type check, queues
// that never block, with their counters), one folding queue per sink
// (Fold), one broadcaster and its watchers for the handlers and loggers,
// the goroutine that consumes each queue and its counters (Consumer), the
// retry-and-classify write to a sink (Writer), the drop-log policy
// (Burst), Flush and Shutdown.
//
// Publish hands an event, on the recorder's goroutine, to the Fold of
// every sink started (where a repeat folds into the event of its kind
// already waiting, so that a burst of repeats takes no room) and, if any
// handler or logger is started, to the broadcaster, whose watchers get
// every event.
//
// What is client-go's in each adapter (how an event is built and
// correlated, which sink methods are called, how errors are classified,
// how retries are spaced) is given to this package by the adapter.
package pipeline

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/heraldgo/herald/broadcast"
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

// Pipeline is one adapter's queues and what hangs on them. Its zero
// value is not usable; create one with New. It is safe for concurrent
// use.
type Pipeline[E Event] struct {
	name     string
	b        *broadcast.Broadcaster[E] // for the handlers
	life     *lifecycle.Group
	clock    clock.PassiveClock
	logger   klog.Logger
	handlers *Set[E, HandlerCounts]
	watched  atomic.Int64 // handlers whose watcher may be registered

	recorded, queued, invalidObject, invalidType, droppedClosed atomic.Uint64
	lastStamp, lastWant                                         atomic.Int64 // see Stamp
	past                                                        pastStamps   // see Stamp
	queueFullLog, closedLog                                     Burst
	// refused counts the events the broadcaster's incoming queue refused:
	// each handler started then missed it (see Consumer.Tally).
	refused atomic.Uint64

	// gate orders Publish, which holds it for reading, against what
	// changes where events go: a sink's Fold added or removed, the
	// shutdown. An event is in every Fold of the sinks started before its
	// Publish, and in none of those stopped before it.
	gate   sync.RWMutex
	closed bool        // the shutdown began; guarded by gate
	folds  []Folder[E] // the sinks' Folds; guarded by gate

	mu        sync.Mutex // guards consumers
	consumers []flushable
}

// Folder is a Fold, whatever its key and data, as the Pipeline sees it.
// Only a *Fold is one.
type Folder[E Event] interface {
	offer(ev E)
	isFolder()
	Close()
}

// flushable is a consumer, as Flush and Shutdown see it.
type flushable interface {
	await(ctx context.Context) error
	reportRest()
	abandonQueued() uint64
}

// New returns a running Pipeline. It starts the broadcaster's distributor
// goroutine; Shutdown ends it.
func New[E Event](o Options) *Pipeline[E] {
	return &Pipeline[E]{
		b: broadcast.New[E](broadcast.Options{
			QueueLength:         o.QueueLength,
			IncomingQueueLength: o.QueueLength,
			// A recorder never blocks, and one slow watcher never holds
			// another: a full watcher misses the newest events, counted.
			Full: broadcast.DropNewest,
		}),
		name:     o.Name,
		life:     lifecycle.New(),
		clock:    o.Clock,
		logger:   o.Logger,
		handlers: NewSet[E](func(c *HandlerCounts, o HandlerCounts) { c.Panics += o.Panics; c.Abandoned += o.Abandoned }),
	}
}

// Stopping is closed once the shutdown has begun.
func (p *Pipeline[E]) Stopping() <-chan struct{} { return p.life.Stopping().Done() }

// Aborting is done once a shutdown's deadline has passed: what is still
// queued is then abandoned, and no sink call starts. A sink call that
// takes a context is given one that ends with it.
func (p *Pipeline[E]) Aborting() context.Context { return p.life.Aborting() }

// Accept counts one recorded event and checks what every event needs: a
// reference to its object, and the type Normal or Warning. It returns the
// reference, or nil after counting and logging the refusal as client-go
// logs it.
func (p *Pipeline[E]) Accept(logger klog.Logger, scheme *runtime.Scheme, object runtime.Object, eventtype, reason, message string) *v1.ObjectReference {
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
// sink started (each Fold counts what it folds or refuses) and, if a
// handler or logger is started, to the broadcaster. An event recorded
// once the shutdown has begun goes nowhere: it is counted as
// DroppedClosed and logged, one line per burst. An event the
// broadcaster's full incoming queue refuses reaches no handler, and each
// handler started counts it as dropped (Consumer.Tally); every sink got
// it. The refusal is logged, one line per burst.
func (p *Pipeline[E]) Publish(logger klog.Logger, ev E) {
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
	for _, f := range p.folds {
		f.offer(ev)
	}
	sent := true
	if p.watched.Load() > 0 {
		// Closed only after the gate closed: the error cannot happen here.
		sent, _ = p.b.TryPublish(ev)
	}
	p.queued.Add(1)
	var n uint64
	due := false
	if !sent {
		// Counted before the gate opens, so that Shutdown, which closes
		// it, finds the refusal in queueFullLog's rest; logged after.
		p.refused.Add(1)
		n, due = p.queueFullLog.Add(p.clock.Now(), 1)
	}
	p.gate.RUnlock()
	if due {
		logger.Error(nil, "Unable to hand event to the event handlers: too many queued events, dropped event", "event", klog.KObj(ev),
			"droppedSinceLastReport", n, "reportedEvery", BurstInterval)
	}
}

// PublishFolded is Publish for an event the recorder has not built, which
// fold may fold into the event it repeats, waiting in the queue of the one
// sink started, q (with Fold.TryFold). It reports whether it did; the
// event is then queued, and counted as Publish counts it. If a handler or
// logger is started (it is owed the event itself), if there is not
// exactly one sink, or if the shutdown has begun, it does nothing and
// returns false: the caller builds the event and Publishes it.
func (p *Pipeline[E]) PublishFolded(fold func(q Folder[E]) bool) bool {
	if p.watched.Load() > 0 {
		return false
	}
	p.gate.RLock()
	defer p.gate.RUnlock()
	if p.closed || len(p.folds) != 1 || !fold(p.folds[0]) {
		return false
	}
	p.queued.Add(1)
	return true
}

// stampWindow is how far back of the latest time Stamp was given a time
// may be and still be moved after the latest it returned: a clock that
// stands still or is coarse; a time further back (a past event, a clock
// set back) is stamped apart from the present (see Stamp).
const stampWindow = uint64(time.Millisecond)

// Stamp returns t, unless an earlier call returned t, or a time less than
// a millisecond after it: then the nanosecond after the latest it
// returned. So the event names generated from its times differ: a fake
// clock that stands still, a coarse system clock or two past events at
// one time would give two events about one object the same name, and the
// server would refuse the second (AlreadyExists). The move is below the
// second, which the stored timestamps keep of core/v1 events, and the
// microsecond, which events.k8s.io/v1 keeps.
//
// A time a millisecond or more before the latest time Stamp was given (a
// past event, a clock set back) does not move the latest time returned,
// which events of the present go on from, however far a clock standing
// still has moved it ahead. Past times are kept apart from each other,
// whatever their order: one returned already, or given again, moves to
// the first nanosecond after it that no past time took. A time a
// millisecond or more after the latest (a clock stepped on, a past event
// given a time ahead of the clock) leaves that instant behind: the times
// returned from it on (those of a clock standing still there) are then
// kept apart from past times like past times, so that a clock that
// stands still again at that instant, or is set back to it, goes on
// after them. Stamp remembers the past times of the last maxPastRuns
// instants it was given or left behind; it does not remember the other
// times of the present it returned (those of instants less than a
// millisecond apart before the latest), so a past time that a clock gave
// an event at such an instant is returned as it is.
func (p *Pipeline[E]) Stamp(t time.Time) time.Time {
	want := t.UnixNano()
	latest := p.lastWant.Load()
	if isPast(want, latest) {
		return t.Add(time.Duration(p.past.stamp(want) - want))
	}
	leaves := isPast(latest, want)
	if leaves {
		// Under the lock of the past times, so that a past time stamped
		// once the latest time moved on finds the instant left behind.
		p.past.mu.Lock()
		if latest = p.lastWant.Load(); isPast(want, latest) {
			p.past.mu.Unlock()
			return t.Add(time.Duration(p.past.stamp(want) - want))
		}
		if leaves = isPast(latest, want); !leaves {
			p.past.mu.Unlock()
		}
	}
	// The latest time returned moves before the latest time given, so
	// that a time of the present stamped once the latest time given
	// moved is after it, and after every past time.
	var n int64
	for {
		last := p.lastStamp.Load()
		if n = want; n <= last {
			n = last + 1
		}
		if p.lastStamp.CompareAndSwap(last, n) {
			if leaves && last >= latest {
				p.past.add(latest, last)
			}
			break
		}
	}
	for latest < want && !p.lastWant.CompareAndSwap(latest, want) {
		latest = p.lastWant.Load()
	}
	if leaves {
		p.past.mu.Unlock()
	}
	return t.Add(time.Duration(n - want))
}

// isPast reports whether want is a millisecond or more before latest:
// stamped apart from the present. The difference is taken unsigned, so
// that it holds however far apart the two times are.
func isPast(want, latest int64) bool {
	return want <= latest && uint64(latest-want) >= stampWindow
}

// maxPastRuns is how many runs of past times pastStamps remembers.
const maxPastRuns = 64

// pastStamps are the past times Stamp returned, as runs of consecutive
// nanoseconds: sorted, apart (a nanosecond no past time took lies between
// two), the least recently stamped forgotten beyond maxPastRuns.
type pastStamps struct {
	mu   sync.Mutex
	runs []pastRun
	tick uint64
}

// pastRun is a run of past times returned, lo to hi.
type pastRun struct {
	lo, hi int64
	used   uint64 // tick of the latest time stamped in it
}

// stamp returns want if no past time returned is want, or else the first
// nanosecond after the run holding it, and remembers it.
func (s *pastStamps) stamp(want int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick++
	// The first run not before want.
	i, _ := slices.BinarySearchFunc(s.runs, want, func(r pastRun, w int64) int { return cmp.Compare(r.hi, w) })
	n := want
	switch {
	case i < len(s.runs) && s.runs[i].lo <= want:
		n = s.runs[i].hi + 1
		s.runs[i].hi = n
	case i > 0 && s.runs[i-1].hi+1 == want:
		i--
		s.runs[i].hi = n
	default:
		s.runs = slices.Insert(s.runs, i, pastRun{lo: n, hi: n})
	}
	s.runs[i].used = s.tick
	if i+1 < len(s.runs) && s.runs[i+1].lo == n+1 {
		s.runs[i].hi = s.runs[i+1].hi
		s.runs = slices.Delete(s.runs, i+1, i+2)
	}
	s.forget()
	return n
}

// add remembers lo to hi, the times of the present returned from an
// instant the present moved on from, as past times returned. The caller
// holds s.mu.
func (s *pastStamps) add(lo, hi int64) {
	s.tick++
	// The runs that touch lo to hi, or lie a nanosecond from it, become
	// one.
	i, _ := slices.BinarySearchFunc(s.runs, lo, func(r pastRun, w int64) int { return cmp.Compare(r.hi, w-1) })
	j := i
	for j < len(s.runs) && s.runs[j].lo-1 <= hi {
		lo, hi = min(lo, s.runs[j].lo), max(hi, s.runs[j].hi)
		j++
	}
	s.runs = slices.Replace(s.runs, i, j, pastRun{lo: lo, hi: hi, used: s.tick})
	s.forget()
}

// forget drops the least recently stamped run beyond maxPastRuns.
func (s *pastStamps) forget() {
	if len(s.runs) > maxPastRuns {
		oldest := 0
		for j, r := range s.runs {
			if r.used < s.runs[oldest].used {
				oldest = j
			}
		}
		s.runs = slices.Delete(s.runs, oldest, oldest+1)
	}
}

// RecorderCounts are the recorder side's counters. Every recorded event
// is counted in Recorded and in exactly one other.
type RecorderCounts struct {
	Recorded, Queued, InvalidObject, InvalidType, DroppedClosed uint64
}

// RecorderCounts returns a snapshot of the recorder side's counters.
func (p *Pipeline[E]) RecorderCounts() RecorderCounts {
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

// Watch registers a watcher's consumer whose goroutine is started, and
// may be started again, with Consumer.Go. Its watcher lives as long as the
// pipeline: what is published while no goroutine runs waits in its queue.
func Watch[E Event, C any](p *Pipeline[E], what string) (*Consumer[E, C], error) {
	p.watched.Add(1)
	missedBase := p.refused.Load()
	w, err := p.b.Watch()
	if err != nil {
		p.watched.Add(-1)
		return nil, err
	}
	c := &Consumer[E, C]{p: p, q: w, w: w, what: what, logger: p.logger, missedBase: missedBase}
	c.handled.End() // no goroutine takes its events yet
	c.stop = c.stopWatcher
	p.register(c)
	return c, nil
}

// WatchFold registers q as a sink's queue, and a consumer of it whose
// goroutine is started, and may be started again, with Consumer.Go: from
// now on every event published is offered to q, which lives as long as
// the pipeline (what is published while no goroutine runs waits in it).
// The goroutine takes q's entries (Fold.Take, Fold.Done) and reports
// with Consumer.Reach. Once the shutdown has begun it returns
// broadcast.ErrClosed.
func WatchFold[E Event, K comparable, P any, C any](p *Pipeline[E], q *Fold[E, K, P], what string) (*Consumer[E, C], error) {
	if !p.addFold(q) {
		return nil, broadcast.ErrClosed
	}
	c := &Consumer[E, C]{p: p, q: q, what: what, logger: p.logger}
	c.handled.End() // no goroutine takes its events yet
	c.stop = func() { p.removeFold(q) }
	p.register(c)
	return c, nil
}

// StartFold is Start for a sink whose queue is q: from now on every event
// published is offered to q; run takes q's entries until q is closed
// (Stop, Shutdown) and empty, and reports with Consumer.Reach.
func StartFold[E Event, K comparable, P any, C any](p *Pipeline[E], set *Set[E, C], q *Fold[E, K, P], what string, logger klog.Logger, run func(*Consumer[E, C])) (*Consumer[E, C], error) {
	if !p.life.Add() {
		return nil, broadcast.ErrClosed
	}
	if !p.addFold(q) { // the shutdown began meanwhile
		p.life.Done()
		return nil, broadcast.ErrClosed
	}
	c := &Consumer[E, C]{p: p, q: q, what: what, logger: logger, running: true}
	c.stop = func() { p.removeFold(q) }
	launch(p, set, c, run)
	return c, nil
}

// addFold makes Publish offer every event to q from now on. It reports
// false, adding nothing, once the shutdown has begun.
func (p *Pipeline[E]) addFold(q Folder[E]) bool {
	p.gate.Lock()
	defer p.gate.Unlock()
	if p.closed {
		return false
	}
	p.folds = append(p.folds, q)
	return true
}

// removeFold makes Publish offer no event to q from now on, and closes q.
// It is idempotent.
func (p *Pipeline[E]) removeFold(q Folder[E]) {
	p.gate.Lock()
	defer p.gate.Unlock()
	p.folds = slices.DeleteFunc(p.folds, func(o Folder[E]) bool { return o == q })
	q.Close()
}

// Start registers a consumer in set and starts its goroutine, which runs
// run and logs with logger; run takes the events (until the watcher is
// stopped or the pipeline shut down, and its queue is drained) and calls
// Done after each. When run returns, the consumer leaves the pipeline and
// its tally joins the set's ended total. Once the shutdown has begun Start
// returns broadcast.ErrClosed.
func Start[E Event, C any](p *Pipeline[E], set *Set[E, C], what string, logger klog.Logger, run func(*Consumer[E, C])) (*Consumer[E, C], error) {
	if !p.life.Add() {
		return nil, broadcast.ErrClosed
	}
	p.watched.Add(1)
	missedBase := p.refused.Load()
	w, err := p.b.Watch()
	if err != nil { // the shutdown began meanwhile
		p.watched.Add(-1)
		p.life.Done()
		return nil, err
	}
	c := &Consumer[E, C]{p: p, q: w, w: w, what: what, logger: logger, running: true, missedBase: missedBase}
	c.stop = c.stopWatcher
	launch(p, set, c, func(c *Consumer[E, C]) {
		defer p.watched.Add(-1)
		run(c)
	})
	return c, nil
}

// launch registers c, running, in set and starts its goroutine, which
// runs run; when run returns, c leaves the pipeline and its tally joins
// the set's ended total.
func launch[E Event, C any](p *Pipeline[E], set *Set[E, C], c *Consumer[E, C], run func(*Consumer[E, C])) {
	set.mu.Lock()
	set.live = append(set.live, c)
	set.mu.Unlock()
	p.register(c)
	go func() {
		defer p.life.Done()
		run(c)
		c.stopped()
		p.unregister(c)
		set.retire(c)
	}()
}

func (p *Pipeline[E]) register(c flushable) {
	p.mu.Lock()
	p.consumers = append(p.consumers, c)
	p.mu.Unlock()
}

func (p *Pipeline[E]) unregister(c flushable) {
	p.mu.Lock()
	p.consumers = slices.DeleteFunc(p.consumers, func(o flushable) bool { return o == c })
	p.mu.Unlock()
}

// HandlerCounts are the counters of an event handler's consumer.
type HandlerCounts struct {
	// Panics counts handler calls that panicked.
	Panics uint64
	// Abandoned counts events not handed to the handler because a
	// shutdown's deadline had passed; Handled counts them too (they are
	// done with).
	Abandoned uint64
}

// StartHandler starts a consumer that calls handler with each event, in
// order, on a goroutine of its own, and then ended, if not nil, once the
// last event was handled. A handler that panics is logged and counted, and
// the next event goes on. Once a shutdown's deadline has passed, the
// events left are not handed to the handler: they are counted as
// abandoned, and the goroutine ends.
func (p *Pipeline[E]) StartHandler(logger klog.Logger, handler func(E), ended func()) (*Consumer[E, HandlerCounts], error) {
	aborting := p.life.Aborting()
	return Start(p, p.handlers, "event handler", logger, func(c *Consumer[E, HandlerCounts]) {
		var counts HandlerCounts
		for ev := range c.All() {
			if aborting.Err() != nil {
				counts.Abandoned++
				c.Done(&counts)
				continue
			}
			if r := call(handler, ev); r != nil {
				counts.Panics++
				logger.Error(nil, "Event handler panicked", "panic", r, "event", klog.KObj(ev))
			}
			c.Done(&counts)
		}
		if counts.Abandoned > 0 {
			logger.Error(nil, "Shutdown deadline passed: abandoned the events queued for the handler", "abandoned", counts.Abandoned)
		}
		if ended != nil {
			ended()
		}
	})
}

// call calls handler and returns what it panicked with, if it did (since
// Go 1.21 a panic never recovers as nil).
func call[E any](handler func(E), ev E) (panicked any) {
	defer func() { panicked = recover() }()
	handler(ev)
	return nil
}

// Handlers returns the tally of every handler started so far.
func (p *Pipeline[E]) Handlers() Tally[HandlerCounts] { return p.handlers.Sum() }

// Flush returns once every event published before the call has been
// handled by every consumer started before the call whose goroutine runs:
// written (or given up on) by a sink, passed to a handler. It returns
// ctx.Err() if ctx ends first. After the shutdown it returns nil at once,
// unless a consumer is still stuck in a call. It panics on a nil ctx.
func (p *Pipeline[E]) Flush(ctx context.Context) error {
	p.mustContext(ctx)
	p.mu.Lock()
	consumers := slices.Clone(p.consumers)
	p.mu.Unlock()
	// Place every event published so far in the queues; after the
	// shutdown that is done already.
	if err := p.b.Flush(ctx); err != nil && !errors.Is(err, broadcast.ErrClosed) {
		return err
	}
	for _, c := range consumers {
		if err := c.await(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Shutdown stops the pipeline: recorders are refused from now on, every
// event published before is handed to the consumers (the Folds are
// closed: their goroutines end once they are empty), and Shutdown waits
// until their goroutines have handled it and ended. If ctx ends first, it
// aborts and returns ctx.Err() without waiting further: Aborted reports
// true, what waits in the sinks' queues is abandoned and counted at once
// (Tally.Abandoned), and a goroutine still in a call abandons the rest of
// what it holds when the call returns (a handler's queue, counted in
// HandlerCounts.Abandoned; the rest of a sink's entry). The abort is
// logged, with what was abandoned at once and what the goroutines still
// hold. Every later call waits for the goroutines again, and returns
// broadcast.ErrClosed rather than nil: events were abandoned. Either way
// the drops no log line reported yet get one. Shutdown is idempotent. It
// panics on a nil ctx.
func (p *Pipeline[E]) Shutdown(ctx context.Context) error {
	p.mustContext(ctx)
	p.life.Stop()
	// From here on Publish refuses; the Folds take no more events, and
	// their goroutines end once they have dealt with what waits.
	p.gate.Lock()
	p.closed = true
	for _, f := range p.folds {
		f.Close()
	}
	p.gate.Unlock()
	// DropNewest watchers never make the distributor wait: this returns
	// once it has placed every queued event and closed the watchers.
	err := p.b.Shutdown(ctx)
	if err == nil {
		err = p.life.Wait(ctx)
	} else {
		p.life.Abort()
	}
	p.mu.Lock()
	left := slices.Clone(p.consumers)
	p.mu.Unlock()
	if err != nil {
		p.abandon(left)
	}
	for _, c := range left {
		c.reportRest()
	}
	if n := p.queueFullLog.Rest(); n > 0 {
		p.logger.Error(nil, "Unable to hand events to the event handlers: too many queued events, dropped events", "droppedSinceLastReport", n)
	}
	if err == nil && p.life.Aborted() {
		err = broadcast.ErrClosed // an earlier call was cut short: events were abandoned
	}
	return err
}

// abandon empties the sinks' queues of consumers, for a shutdown whose
// deadline passed, and logs what it abandoned and what the goroutines
// still running hold: the events left in the handlers' queues, which
// each abandons once its current call returns, and the entries the sinks
// are writing.
func (p *Pipeline[E]) abandon(consumers []flushable) {
	var abandoned uint64
	for _, c := range consumers {
		abandoned += c.abandonQueued()
	}
	h := p.handlers.Sum()
	held := h.Queued - h.Handled - h.Dropped
	p.logger.Error(nil, "Event broadcaster shutdown deadline passed: abandoning the events not handled yet",
		"abandoned", abandoned, "heldByHandlers", held, "goroutinesRunning", p.life.Live())
}

// mustContext panics on a nil ctx, as the standard library does: that is
// a programming error.
func (p *Pipeline[E]) mustContext(ctx context.Context) {
	if ctx == nil {
		panic(p.name + ": nil Context")
	}
}

// ShutdownWithin runs shutdown with a context that ends after d: the
// body of the adapters' Shutdown, which returns nothing (a deadline that
// passes is logged by the pipeline's Shutdown, with what it abandoned).
func ShutdownWithin(d time.Duration, shutdown func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_ = shutdown(ctx)
}
