package events

import (
	"context"
	"hash/maphash"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// entry is a remembered event, with the series count last written. While
// event has no series it is the recorded event itself, which every
// watcher shares and none modifies; the second occurrence replaces it with
// a copy of the writer's own, which carries the series. (One copy fewer
// per new event than client-go: BenchmarkRecordToSink.)
type entry struct {
	event   *eventsv1.Event
	written int32 // series count the sink has (1 for a singleton)
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
	// Past the deadline, or the recording ended. The abort is read
	// itself: the context that follows it learns of it a moment later.
	if wr.aborted() || wr.ctx.Err() != nil {
		wr.abandonHeld(uint64(n))
		return
	}
	// A series is observed when its events are recorded (client-go: when
	// its goroutine for the event runs, soon after).
	last := w.Data.last
	if n == 1 {
		last = w.First.EventTime
	}
	k := w.Key
	h := maphash.Comparable(wr.seed, k) // once per entry, on the writer's goroutine
	if ent, ok := wr.cache.Get(h, func(o *key) bool { return *o == k }); ok {
		wr.observe(ent, n, last)
		return
	}
	if !wr.makeRoom() { // the deadline passed during the write of the series it evicted
		wr.abandonHeld(uint64(n))
		return
	}
	wr.create(h, k, w.First, n, last)
}

// observe counts n more events, the newest observed at last, in the
// series of ent, and opens the series if ent held a single event.
func (wr *writer) observe(ent *entry, n int32, last metav1.MicroTime) {
	if s := ent.event.Series; s != nil {
		s.Count += n
		s.LastObservedTime = last
		wr.counts.seriesObserved += uint64(n)
		return
	}
	wr.openSeries(ent, 1+n, last)
	wr.counts.seriesObserved += uint64(n - 1)
}

// makeRoom forgets the least recently used entry if the cache is full
// (see forget). It reports false if the shutdown's deadline passed
// meanwhile: no further sink call may start.
func (wr *writer) makeRoom() bool {
	if wr.cache.Len() < wr.e.cfg.cacheSize {
		return true
	}
	_, old, _ := wr.cache.RemoveOldest()
	wr.forget(&old)
	return !wr.aborted()
}

// create remembers ev, the first of n events of its series (key k, hash
// h), and creates it; with n > 1 it opens the series too.
func (wr *writer) create(h uint64, k key, ev *eventsv1.Event, n int32, last metav1.MicroTime) {
	ent, _ := wr.cache.Add(h, k)
	*ent = entry{event: ev}
	if wr.w.Write(wr.ctx, &wr.counts.Counts, ev.DeepCopy(), wr.attempt) {
		ent.written = 1
	}
	switch {
	case n == 1:
	case wr.aborted(): // the deadline passed during the create
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

// writeSeries writes a series' current count once (refresh, finish,
// eviction, shutdown). It reports whether the sink has it now, and whether
// the matter is settled (written, or failed for good: client-go's "no
// retry").
func (wr *writer) writeSeries(ev *eventsv1.Event) (written, settled bool) {
	written, settled = wr.w.WriteOnce(&wr.counts.Counts, ev.DeepCopy(), wr.attempt)
	switch {
	case written:
		wr.counts.seriesWrites++
	case wr.aborted(): // its Patch found the event gone past the deadline: no Create
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
	for k, ent := range wr.cache.All() {
		if wr.aborted() { // the deadline passed during a write
			return
		}
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
		wr.cache.Remove(maphash.Comparable(wr.seed, *k), func(o *key) bool { return o == k })
	}
}

// refresh is client-go's refreshExistingEventSeries: every open series is
// written again, so that it outlives the server's event TTL.
func (wr *writer) refresh() {
	for _, ent := range wr.cache.All() {
		if wr.aborted() { // the deadline passed during a write
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
// at Shutdown's drain. Once giveUp is done (the shutdown's deadline has
// passed, or the drain's context ended), the series left are not
// written: they are counted (SeriesUnwritten) and logged, with the
// events the server does not have.
func (wr *writer) flush(giveUp context.Context) {
	if wr.flushed {
		return
	}
	wr.flushed = true
	defer wr.c.Publish(&wr.counts)
	var unwritten, events uint64
	for _, ent := range wr.cache.All() {
		s := ent.event.Series
		if s == nil || s.Count <= ent.written {
			continue
		}
		if giveUp.Err() != nil || wr.aborted() {
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
