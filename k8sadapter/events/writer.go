package events

import (
	"context"
	"encoding/json"
	"hash/maphash"
	"math/rand/v2"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/internal/kube"
	"github.com/heraldgo/herald/internal/lru"
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

// entry is a remembered event, with the series count last written.
type entry struct {
	event   *eventsv1.Event
	written int32 // series count the sink has (1 for a singleton)
}

// writer is the one goroutine that writes to the sink: it owns the series
// cache, so no lock is needed around it.
type writer struct {
	e     *EventBroadcaster
	w     *broadcast.Watcher[*eventsv1.Event]
	seed  maphash.Seed
	cache *lru.Cache[key, entry]

	created, patched, observed, evicted               atomic.Uint64
	failedConstruction, failedRejected, failedRetries atomic.Uint64
	failedShutdown, failedPanic, abandoned, retries   atomic.Uint64
	seriesWrites, seriesWriteFailures, nilResponses   atomic.Uint64
}

func newWriter(e *EventBroadcaster, w *broadcast.Watcher[*eventsv1.Event]) *writer {
	return &writer{e: e, w: w, seed: maphash.MakeSeed(), cache: lru.New[key, entry](e.cfg.cacheSize)}
}

// run takes events until the broadcaster shuts down (then it flushes the
// open series) or ctx ends (then it abandons what is queued). The finish
// and refresh passes run on this goroutine too, on timers of the
// broadcaster's clock.
func (wr *writer) run(ctx context.Context) {
	clk := wr.e.cfg.clock
	finish, refresh := clk.NewTimer(FinishTime), clk.NewTimer(RefreshTime)
	defer finish.Stop()
	defer refresh.Stop()
	events := wr.w.Events()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				wr.flush(ctx)
				return
			}
			wr.handle(ctx, ev)
		case <-finish.C():
			wr.finish(ctx)
			finish.Reset(FinishTime)
		case <-refresh.C():
			wr.refresh(ctx)
			refresh.Reset(RefreshTime)
		case <-ctx.Done():
			wr.w.Stop()
			for range events {
				wr.abandoned.Add(1)
			}
			return
		}
	}
}

// handle is client-go's recordToSink for one event, without the goroutine:
// a new event is created; the second of a series is patched with the
// series; later ones only count.
func (wr *writer) handle(ctx context.Context, ev *eventsv1.Event) {
	if wr.e.life.Aborted() {
		wr.abandoned.Add(1)
		return
	}
	k := keyOf(ev)
	h := maphash.Comparable(wr.seed, k)
	now := metav1.MicroTime{Time: wr.e.cfg.clock.Now()}
	if ent, ok := wr.cache.Get(k, h); ok {
		if ent.event.Series != nil {
			ent.event.Series.Count++
			ent.event.Series.LastObservedTime = now
			wr.observed.Add(1)
			return
		}
		ent.event.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: now}
		if wr.attempts(ctx, ent.event.DeepCopy(), true) {
			ent.written = 2
		}
		return
	}
	ent, recycled := wr.cache.Add(k, h)
	var final *eventsv1.Event
	if recycled {
		wr.evicted.Add(1)
		if s := ent.event.Series; s != nil && s.Count > ent.written {
			final = ent.event // its last count is not on the server yet
		}
	}
	*ent = entry{event: ev.DeepCopy()}
	if final != nil {
		wr.writeSeries(ctx, final)
	}
	if wr.attempts(ctx, ent.event.DeepCopy(), true) {
		ent.written = 1
	}
}

// attempts writes ev with client-go's retries: up to WithMaxTries attempts,
// pausing a jittered sleep duration between them; one attempt once the
// shutdown began. It reports whether ev was written. With count set, the
// outcome is counted against the event that caused the write.
func (wr *writer) attempts(ctx context.Context, ev *eventsv1.Event, count bool) bool {
	e := wr.e
	for tries := 1; ; tries++ {
		created, err, retry := wr.write(ctx, ev)
		if err == nil {
			if count && created {
				wr.created.Add(1)
			} else if count {
				wr.patched.Add(1)
			}
			return true
		}
		if !retry {
			if count {
				wr.countFailure(err)
			}
			return false
		}
		if tries >= e.cfg.maxTries {
			if count {
				wr.failedRetries.Add(1)
			}
			e.logger.Error(nil, "Unable to write event (retry limit exceeded!)", "event", klog.KObj(ev))
			return false
		}
		// Jittered as client-go's wait.Jitter(sleep, 0.25).
		delay := e.cfg.sleep + time.Duration(rand.Float64()*0.25*float64(e.cfg.sleep))
		if e.life.IsStopping() || !e.life.Pause(e.cfg.clock, delay) || ctx.Err() != nil {
			if count {
				wr.failedShutdown.Add(1)
			}
			return false
		}
		wr.retries.Add(1)
	}
}

func (wr *writer) countFailure(err error) {
	switch err.(type) {
	case *rest.RequestConstructionError:
		wr.failedConstruction.Add(1)
	case *kube.SinkPanic:
		wr.failedPanic.Add(1)
	default:
		wr.failedRejected.Add(1)
	}
}

// write is client-go's recordEvent: patch a series (create when the event
// is gone), create otherwise; it reports whether it created, the error,
// and whether the error is worth another attempt.
func (wr *writer) write(ctx context.Context, ev *eventsv1.Event) (created bool, err error, retry bool) {
	logger := wr.e.logger
	series := ev.Series != nil
	var got *eventsv1.Event
	if series {
		patch, perr := seriesPatch(ev)
		if perr != nil {
			logger.Error(perr, "Unable to calculate diff, no merge is possible")
			return false, &rest.RequestConstructionError{Err: perr}, false
		}
		got, err = kube.Call(func() (*eventsv1.Event, error) { return wr.e.sink.Patch(ctx, ev, patch) })
	}
	if !series || util.IsKeyNotFoundError(err) {
		ev.ResourceVersion = ""
		created = true
		got, err = kube.Call(func() (*eventsv1.Event, error) { return wr.e.sink.Create(ctx, ev) })
	}
	if err == nil {
		if got == nil {
			wr.nilResponses.Add(1)
		}
		return created, nil, false
	}
	switch err.(type) {
	case *rest.RequestConstructionError:
		logger.Error(err, "Unable to construct event (will not retry!)", "event", klog.KObj(ev))
		return created, err, false
	case *apierrors.StatusError:
		if apierrors.IsAlreadyExists(err) {
			if series {
				// The create of the first occurrence raced the patch.
				return created, err, true
			}
			logger.V(5).Info("Server rejected event (will not retry!)", "event", klog.KObj(ev), "err", err)
		} else {
			logger.Error(err, "Server rejected event (will not retry!)", "event", klog.KObj(ev))
		}
		return created, err, false
	case *kube.SinkPanic:
		logger.Error(err, "Event sink panicked (will not retry!)", "event", klog.KObj(ev))
		return created, err, false
	}
	logger.Error(err, "Unable to write event (may retry after sleeping)")
	return created, err, true
}

// seriesPatch is client-go's createPatchBytesForSeries: the strategic merge
// patch from the event without its series to the event. It runs once per
// series write, not per event.
func seriesPatch(ev *eventsv1.Event) ([]byte, error) {
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
func (wr *writer) writeSeries(ctx context.Context, ev *eventsv1.Event) (written, settled bool) {
	_, err, retry := wr.write(ctx, ev.DeepCopy())
	if err != nil {
		wr.seriesWriteFailures.Add(1)
		return false, !retry
	}
	wr.seriesWrites.Add(1)
	return true, true
}

// finish is client-go's finishSeries, on the broadcaster's clock: a series
// not observed for FinishTime gets its final count written and is
// forgotten; a single event older than FinishTime is forgotten.
func (wr *writer) finish(ctx context.Context) {
	cutoff := wr.e.cfg.clock.Now().Add(-FinishTime)
	var done []key
	for k, ent := range wr.cache.All() {
		if s := ent.event.Series; s != nil {
			if s.LastObservedTime.Time.Before(cutoff) {
				if _, settled := wr.writeSeries(ctx, ent.event); settled {
					done = append(done, k)
				}
			}
		} else if ent.event.EventTime.Time.Before(cutoff) {
			done = append(done, k)
		}
	}
	for _, k := range done {
		wr.cache.Remove(k, maphash.Comparable(wr.seed, k))
	}
}

// refresh is client-go's refreshExistingEventSeries: every open series is
// written again, so that it outlives the server's event TTL.
func (wr *writer) refresh(ctx context.Context) {
	for _, ent := range wr.cache.All() {
		if s := ent.event.Series; s != nil {
			if written, _ := wr.writeSeries(ctx, ent.event); written {
				ent.written = s.Count
			}
		}
	}
}

// flush writes, once each, the series whose latest count the server does
// not have: the shutdown loses no count.
func (wr *writer) flush(ctx context.Context) {
	for _, ent := range wr.cache.All() {
		if wr.e.life.Aborted() {
			return
		}
		if s := ent.event.Series; s != nil && s.Count > ent.written {
			if written, _ := wr.writeSeries(ctx, ent.event); written {
				ent.written = s.Count
			}
		}
	}
}

func (wr *writer) addTo(s *Stats) {
	s.Created = wr.created.Load()
	s.Patched = wr.patched.Load()
	s.SeriesObserved = wr.observed.Load()
	s.Evicted = wr.evicted.Load()
	s.FailedConstruction = wr.failedConstruction.Load()
	s.FailedRejected = wr.failedRejected.Load()
	s.FailedRetries = wr.failedRetries.Load()
	s.FailedShutdown = wr.failedShutdown.Load()
	s.FailedPanic = wr.failedPanic.Load()
	s.Abandoned = wr.abandoned.Load()
	s.Retries = wr.retries.Load()
	s.SeriesWrites = wr.seriesWrites.Load()
	s.SeriesWriteFailures = wr.seriesWriteFailures.Load()
	s.NilResponses = wr.nilResponses.Load()
	s.DroppedSinkQueue = wr.w.Dropped()
}
