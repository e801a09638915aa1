package events

import (
	"context"
	"encoding/json"
	"hash/maphash"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/heraldgo/herald/k8sadapter/internal/kube"
	"github.com/heraldgo/herald/k8sadapter/internal/pipeline"
)

// key is client-go's isomorphism key: events equal in these fields form a
// series; the note is not part of it.
type key struct {
	eventType, action, reason              string
	reportingController, reportingInstance string
	regarding, related                     corev1.ObjectReference
}

func keyOf(e *eventsv1.Event) key {
	k := key{
		eventType: e.Type, action: e.Action, reason: e.Reason,
		reportingController: e.ReportingController, reportingInstance: e.ReportingInstance,
		regarding: e.Regarding,
	}
	if e.Related != nil {
		k.related = *e.Related
	}
	return k
}

// entry is a remembered event, with the series count last written. While
// event has no series it is the recorded event itself, which every
// watcher shares and none modifies; the second occurrence replaces it with
// a copy of the writer's own, which carries the series. (One copy fewer
// per new event than client-go: BenchmarkRecordToSink.)
type entry struct {
	key     key
	event   *eventsv1.Event
	written int32 // series count the sink has (1 for a singleton)
}

// pending is an entry of the writer's queue: the first event of a series
// waiting for the writer, and the isomorphic events folded into it.
type pending = pipeline.Entry[*eventsv1.Event, key, folded]

// folded is what an entry keeps of the events folded into it: the time of
// the newest.
type folded struct{ last metav1.MicroTime }

// writer writes to the sink. Its queue, a Fold, exists from
// NewBroadcaster on; its goroutine runs while recording
// (StartRecordingToSinkWithContext, until that context ends or the
// broadcaster shuts down). Everything in it below c belongs to that
// goroutine, the series cache included, so no lock guards them.
type writer struct {
	e       *EventBroadcaster
	q       *pipeline.Fold[*eventsv1.Event, key, folded]
	c       *pipeline.Consumer[*eventsv1.Event, writerCounts]
	w       pipeline.Writer[*eventsv1.Event]
	attempt pipeline.Attempt[*eventsv1.Event] // wr.write, bound once
	ctx     context.Context                   // the recording context: sink calls take it
	seed    maphash.Seed
	// cache maps the hash of each key to its entry: struct keys of some
	// twenty strings are hashed once per entry taken from the queue, not
	// once per map operation. Two keys with one hash (odds of 2^-64 a
	// pair) make each other forgotten, as an eviction would.
	cache  *simplelru.LRU[uint64, *entry]
	counts writerCounts
	// flushed is set once the writer has written the open series' final
	// counts at shutdown (see flush).
	flushed bool
}

// newWriter returns the writer of e, its queue registered with e's
// pipeline. The queue holds WithQueueLength series waiting, and never
// fewer than the writer remembers (WithCacheSize).
func newWriter(e *EventBroadcaster) *writer {
	cache, err := simplelru.NewLRU[uint64, *entry](e.cfg.cacheSize, nil)
	if err != nil {
		panic("events: " + err.Error()) // cacheSize is positive
	}
	wr := &writer{
		e: e,
		w: pipeline.Writer[*eventsv1.Event]{
			MaxTries: e.cfg.MaxTries,
			Pause:    jitter(e.cfg.Sleep),
			Classify: classify,
			Clock:    e.cfg.clock,
			Stopping: e.p.Stopping(),
			Logger:   e.logger,
		},
		seed:  maphash.MakeSeed(),
		cache: cache,
	}
	wr.q = pipeline.NewFold(max(e.cfg.QueueLength, e.cfg.cacheSize), pipeline.FoldRule[*eventsv1.Event, key, folded]{
		Key:   seriesKey,
		Fold:  fold,
		Reset: func(f *folded) { *f = folded{} },
	})
	c, err := pipeline.WatchFold[*eventsv1.Event, key, folded, writerCounts](e.p, wr.q, "sink")
	if err != nil {
		panic("events: " + err.Error()) // a new pipeline is not shut down
	}
	wr.c = c
	wr.attempt = wr.write
	return wr
}

// seriesKey is the queue's key: every event may fold, into the event of
// its series. (A map keyed by the struct hashes it without allocating;
// maphash.Comparable makes its argument escape, and would cost the
// recorder an allocation per event.)
func seriesKey(ev *eventsv1.Event) (key, bool) { return keyOf(ev), true }

// foldUnbuilt folds an event that the recorder has not built yet into the
// event of its series waiting for the writer, if there is one and no
// handler is owed the event itself, and reports whether it did: building
// the event (its name, its copy of every field) would be wasted.
func (wr *writer) foldUnbuilt(regarding, related *corev1.ObjectReference, eventType, reason, action, controller, instance string, at metav1.MicroTime) bool {
	k := key{
		eventType: eventType, action: action, reason: reason,
		reportingController: controller, reportingInstance: instance,
		regarding: *regarding,
	}
	if related != nil {
		k.related = *related
	}
	return wr.e.p.PublishFolded(func(q pipeline.Folder[*eventsv1.Event]) bool {
		return q == pipeline.Folder[*eventsv1.Event](wr.q) && wr.q.TryFold(k, func(w *pending) bool {
			w.Data.last = at
			return true
		})
	})
}

// fold folds ev into w, the event of its series waiting for the writer:
// it adds no more than its count and time (client-go keeps nothing else
// of a series' later events either). It runs under the queue's lock, on
// the recording goroutine, and allocates nothing.
func fold(w *pending, ev *eventsv1.Event) bool {
	w.Data.last = ev.EventTime
	return true
}

// jitter is client-go's spacing of attempts, wait.Jitter(sleep, 0.25):
// each pause is sleep plus up to a quarter more.
func jitter(sleep time.Duration) func(int) time.Duration {
	return func(int) time.Duration { return sleep + time.Duration(rand.Float64()*0.25*float64(sleep)) }
}

// classify is client-go's recordEvent classification for events.k8s.io:
// every StatusError is final, except AlreadyExists for a series (the
// create of its first occurrence raced the patch, so another attempt
// finds it); AlreadyExists is expected, and logged at V(5).
func classify(err error, ev *eventsv1.Event) (pipeline.Class, bool) {
	c := pipeline.ClassOf(err)
	if c != pipeline.Rejected || !apierrors.IsAlreadyExists(err) {
		return c, false
	}
	if ev.Series != nil {
		return pipeline.Retry, true
	}
	return c, true
}

// run returns the body of the writer's goroutine for one recording: it
// takes the queue's entries, in the order of their first event, until the
// broadcaster shuts down (then it writes every open series' final count)
// or ctx ends (then what is queued waits for the next recording, or for
// Shutdown to abandon it). The finish and refresh passes run on this
// goroutine too, on timers of the broadcaster's clock.
func (wr *writer) run(ctx context.Context, logger klog.Logger) func(*pipeline.Consumer[*eventsv1.Event, writerCounts]) {
	return func(c *pipeline.Consumer[*eventsv1.Event, writerCounts]) {
		wr.ctx, wr.w.Logger = ctx, logger
		wr.w.Progress = func() { c.Publish(&wr.counts) }
		clk := wr.e.cfg.clock
		finish, refresh := clk.NewTimer(FinishTime), clk.NewTimer(RefreshTime)
		defer finish.Stop()
		defer refresh.Stop()
		// pass runs a periodic pass and sets its timer again.
		pass := func(run func(), t clock.Timer, d time.Duration) {
			if wr.e.p.Aborted() { // no sink call once the deadline passed
				return
			}
			run()
			c.Publish(&wr.counts)
			t.Reset(d)
		}
		for ctx.Err() == nil { // an ended context wins over a queued event
			select { // a flood of events does not hold the passes back
			case <-finish.C():
				pass(wr.finish, finish, FinishTime)
				continue
			case <-refresh.C():
				pass(wr.refresh, refresh, RefreshTime)
				continue
			default:
			}
			w, closed := wr.q.Take()
			if w != nil {
				wr.handle(w)
				c.Reach(wr.q.Done(w), &wr.counts)
				continue
			}
			if closed {
				wr.flush(wr.e.p.Aborted)
				return
			}
			select {
			case <-wr.q.Ready():
			case <-finish.C():
				pass(wr.finish, finish, FinishTime)
			case <-refresh.C():
				pass(wr.refresh, refresh, RefreshTime)
			case <-ctx.Done():
			}
		}
		// What is queued waits for the next recording, or for Shutdown to
		// abandon it.
	}
}

// drain is what Shutdown leaves to the writer once no goroutine of its
// runs (see Consumer.Drain): what is left in the queue is abandoned, and,
// if the recording ended before the shutdown (its context ended), the
// open series get their final count, bounded by the shutdown's ctx.
func (wr *writer) drain(ctx context.Context) {
	wr.abandon()
	wr.ctx = ctx // the recording context has ended: sink calls take this one
	wr.flush(func() bool { return wr.e.p.Aborted() || ctx.Err() != nil })
}

// abandon counts, and logs, the events no writer will take: what is left
// in the queue at Shutdown when the writer is not recording.
func (wr *writer) abandon() {
	var n uint64
	for {
		w, _ := wr.q.Take()
		if w == nil {
			break
		}
		n += uint64(w.Events)
		wr.counts.Abandoned += uint64(w.Events)
		wr.c.Reach(wr.q.Done(w), &wr.counts)
	}
	if n > 0 {
		wr.w.Logger.Error(nil, "Shutdown found the writer not recording: abandoning the events waiting for it", "abandoned", n)
	}
}

// handle is client-go's recordToSink for the events of one entry, without
// the goroutine: the first of a series is created, the second patched
// with the series, later ones only counted. The events folded into the
// entry arrived before the writer took it; client-go would have counted
// them in its series one by one, and written the count they reach by
// its finish pass or shutdown at the latest; the writer writes that
// count at once, with the write that client-go makes for the second
// event. A new series of n events thus costs a create and one patch of
// count n (client-go: a create, a patch of count 2, and a patch of count
// n at the finish pass).
//
// Each event is counted in the fate client-go would have given it: its
// series' create (Created, or a failure), the patch of its second event
// (Patched, or a failure), or SeriesObserved; folded ones in Folded too.
func (wr *writer) handle(w *pending) {
	n := int32(w.Events)
	if wr.e.p.Aborted() || wr.ctx.Err() != nil {
		wr.abandonHeld(uint64(n))
		return
	}
	// A series is observed when its events are recorded (client-go: when
	// its goroutine for the event runs, soon after).
	ev, last := w.First, w.Data.last
	if n == 1 {
		last = ev.EventTime
	}
	k := w.Key
	h := maphash.Comparable(wr.seed, k) // once per entry, on the writer's goroutine
	ent, ok := wr.cache.Get(h)
	if ok && ent.key == k {
		if ent.event.Series != nil {
			ent.event.Series.Count += n
			ent.event.Series.LastObservedTime = last
			wr.counts.seriesObserved += uint64(n)
			return
		}
		wr.openSeries(ent, 1+n, last)
		wr.counts.seriesObserved += uint64(n - 1)
		return
	}
	if ok { // another key with the same hash: it makes way
		wr.cache.Remove(h)
	} else if wr.cache.Len() >= wr.e.cfg.cacheSize {
		_, ent, _ = wr.cache.RemoveOldest()
	}
	if ent != nil {
		wr.forget(ent)
		if wr.e.p.Aborted() { // the deadline passed during its write
			wr.abandonHeld(uint64(n))
			return
		}
	} else {
		ent = new(entry)
	}
	*ent = entry{key: k, event: ev}
	wr.cache.Add(h, ent)
	if wr.w.Write(wr.ctx, &wr.counts.Counts, ev.DeepCopy(), wr.attempt) {
		ent.written = 1
	}
	switch {
	case n == 1:
	case wr.e.p.Aborted(): // the deadline passed during the create
		wr.abandonHeld(uint64(n - 1))
	default:
		wr.openSeries(ent, n, last)
		wr.counts.seriesObserved += uint64(n - 2)
	}
}

// abandonHeld counts, and logs, n events of the entry the writer took,
// which it will not write: the shutdown's deadline passed, or the
// recording context ended (what waits in the queue then waits for the
// next recording, or for Shutdown).
func (wr *writer) abandonHeld(n uint64) {
	wr.w.Abandon(&wr.counts.Counts, n, "past the shutdown deadline, or the recording context ended")
}

// openSeries turns ent's single event into a series of count events, the
// newest observed at last, and patches it into the sink: the write
// client-go makes for a series' second event.
func (wr *writer) openSeries(ent *entry, count int32, last metav1.MicroTime) {
	ent.event = ent.event.DeepCopy() // the writer's own from now on
	ent.event.Series = &eventsv1.EventSeries{Count: count, LastObservedTime: last}
	if wr.w.Write(wr.ctx, &wr.counts.Counts, ent.event.DeepCopy(), wr.attempt) {
		ent.written = count
	}
}

// forget counts an entry evicted from the cache, and first writes the
// final count of its series if the sink does not have it.
func (wr *writer) forget(ent *entry) {
	wr.counts.evicted++
	if s := ent.event.Series; s != nil && s.Count > ent.written {
		wr.writeSeries(ent.event)
	}
}

// write makes one attempt, client-go's recordEvent: patch a series (create
// when the event is gone), create otherwise.
func (wr *writer) write(ev *eventsv1.Event) (got *eventsv1.Event, created bool, err error) {
	series := ev.Series != nil
	if series {
		patch, perr := seriesPatch(ev)
		if perr != nil {
			wr.w.Logger.Error(perr, "Unable to calculate diff, no merge is possible")
			return nil, false, &rest.RequestConstructionError{Err: perr}
		}
		got, err = kube.Call(func() (*eventsv1.Event, error) { return wr.e.sink.Patch(wr.ctx, ev, patch) })
		if util.IsKeyNotFoundError(err) && wr.e.p.Aborted() {
			return nil, false, pipeline.ErrAbandoned // no Create after the deadline
		}
	}
	if !series || util.IsKeyNotFoundError(err) {
		created = true
		ev.ResourceVersion = ""
		got, err = kube.Call(func() (*eventsv1.Event, error) { return wr.e.sink.Create(wr.ctx, ev) })
	}
	return got, created, err
}

// seriesPatch is client-go's createPatchBytesForSeries, the strategic
// merge patch from the event without its series to the event, byte for
// byte (FuzzSeriesPatch): the two differ in the series only, so the patch
// is the series, built here without the JSON diff that costs client-go a
// third of a burst's CPU (BenchmarkBurst, workload=repeats). A zero time,
// which encodes as null, takes client-go's way.
func seriesPatch(ev *eventsv1.Event) ([]byte, error) {
	s := ev.Series
	if s == nil || s.LastObservedTime.IsZero() {
		return diffPatch(ev)
	}
	buf := make([]byte, 0, 80)
	buf = append(buf, `{"series":{"count":`...)
	buf = strconv.AppendInt(buf, int64(s.Count), 10)
	buf = append(buf, `,"lastObservedTime":"`...)
	buf = s.LastObservedTime.UTC().AppendFormat(buf, metav1.RFC3339Micro)
	return append(buf, `"}}`...), nil
}

// diffPatch is client-go's createPatchBytesForSeries.
func diffPatch(ev *eventsv1.Event) ([]byte, error) {
	old := ev.DeepCopy()
	old.Series = nil
	oldData, err := json.Marshal(old)
	if err != nil {
		return nil, err
	}
	newData, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	return strategicpatch.CreateTwoWayMergePatch(oldData, newData, eventsv1.Event{})
}

// writeSeries writes a series' current count once (refresh, finish,
// eviction, shutdown). It reports whether the sink has it now, and whether
// the matter is settled (written, or failed for good: client-go's "no
// retry").
func (wr *writer) writeSeries(ev *eventsv1.Event) (written, settled bool) {
	written, settled = wr.w.WriteOnce(&wr.counts.Counts, ev.DeepCopy(), wr.attempt)
	switch {
	case written:
		wr.counts.seriesWrites++
	case wr.e.p.Aborted(): // its Patch found the event gone past the deadline: no Create
		wr.unwritten(1, uint64(ev.Series.Count))
	default:
		wr.counts.seriesWriteFailures++
	}
	return written, settled
}

// finish is client-go's finishSeries, on the broadcaster's clock: a series
// not observed for FinishTime gets its final count written and is
// forgotten; a single event older than FinishTime is forgotten.
func (wr *writer) finish() {
	cutoff := wr.e.cfg.clock.Now().Add(-FinishTime)
	for _, h := range wr.cache.Keys() {
		if wr.e.p.Aborted() { // the deadline passed during a write
			return
		}
		ent, _ := wr.cache.Peek(h)
		if s := ent.event.Series; s != nil {
			if !s.LastObservedTime.Time.Before(cutoff) {
				continue
			}
			if _, settled := wr.writeSeries(ent.event); !settled {
				continue
			}
		} else if !ent.event.EventTime.Time.Before(cutoff) {
			continue
		}
		wr.cache.Remove(h)
	}
}

// refresh is client-go's refreshExistingEventSeries: every open series is
// written again, so that it outlives the server's event TTL.
func (wr *writer) refresh() {
	for _, ent := range wr.cache.Values() {
		if wr.e.p.Aborted() { // the deadline passed during a write
			return
		}
		if s := ent.event.Series; s != nil {
			if written, _ := wr.writeSeries(ent.event); written {
				ent.written = s.Count
			}
		}
	}
}

// flush writes, once each, the series whose latest count the server does
// not have, and publishes the counts: the shutdown loses no count. It
// runs once, when the recording ends at Shutdown or, if it ended before,
// at Shutdown's drain. Once giveUp reports true (the shutdown's deadline
// has passed), the series left are not written: they are counted
// (SeriesUnwritten) and logged, with the events the server does not have.
func (wr *writer) flush(giveUp func() bool) {
	if wr.flushed {
		return
	}
	wr.flushed = true
	defer wr.c.Publish(&wr.counts)
	var unwritten, events uint64
	for _, ent := range wr.cache.Values() {
		s := ent.event.Series
		if s == nil || s.Count <= ent.written {
			continue
		}
		if giveUp() {
			unwritten++
			events += uint64(s.Count - ent.written)
			continue
		}
		if written, _ := wr.writeSeries(ent.event); written {
			ent.written = s.Count
		}
	}
	if unwritten > 0 {
		wr.unwritten(unwritten, events)
	}
}

// unwritten counts, and logs, open series whose final count the shutdown
// leaves unwritten, its deadline passed, and the events the server lacks.
func (wr *writer) unwritten(series, events uint64) {
	wr.counts.seriesUnwritten += series
	wr.w.Logger.Error(nil, "Shutdown deadline passed: final counts of open series not written",
		"series", series, "eventsNotCounted", events)
}
