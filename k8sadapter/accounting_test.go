package k8sadapter_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclocks "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/internal/testkit"
	"github.com/heraldgo/herald/k8sadapter"
)

// sinkFates is the sum of a sink's fate counters (see Stats).
func sinkFates(s k8sadapter.Stats) uint64 {
	return s.Created + s.Patched + s.SpamSkipped + s.DroppedSinkQueue + s.FailedConstruction + s.FailedRejected + s.FailedForbidden +
		s.FailedRetries + s.FailedShutdown + s.FailedPanic + s.Abandoned
}

// recorderFates is the sum of the recorder side's fate counters.
func recorderFates(s k8sadapter.Stats) uint64 {
	return s.Queued + s.InvalidObject + s.InvalidType + s.DroppedClosed
}

// TestTypedNilReferenceIsRefused: a typed nil *v1.ObjectReference, for
// which client-go's reference helper returns neither a reference nor an
// error, is refused and counted by every recording method, never a panic
// in the caller's goroutine.
func TestTypedNilReferenceIsRefused(t *testing.T) {
	e := newBroadcaster(t)
	sink := &scriptSink{}
	e.StartRecordingToSink(sink)
	r := recorder(e)
	var ref *v1.ObjectReference
	r.Event(ref, v1.EventTypeNormal, "Started", "event")
	r.Eventf(ref, v1.EventTypeNormal, "Started", "%s", "eventf")
	r.AnnotatedEventf(ref, map[string]string{"k": "v"}, v1.EventTypeNormal, "Started", "%s", "annotated")
	r.(*k8sadapter.Recorder).PastEventf(ref, metav1.Now(), v1.EventTypeNormal, "Started", "%s", "past")
	r.Event(pod("ok"), v1.EventTypeNormal, "Started", "a valid one")
	join(t, e)
	want := k8sadapter.Stats{Recorded: 5, InvalidObject: 4, Queued: 1, Created: 1}
	if diff := cmp.Diff(want, e.Stats()); diff != "" {
		t.Errorf("Stats() (-want +got):\n%s", diff)
	}
	if calls := sink.snapshot(); len(calls) != 1 {
		t.Errorf("sink calls %v, want the valid event only", verbs(calls))
	}
}

// TestStopRightAfterRecordingHandlesEveryEvent: a sink stopped right after
// events were recorded still writes every one of them, and counts each in
// one fate: Stop takes effect at its queue position. (Before, the events
// not yet distributed when Stop arrived were neither written nor counted,
// in a few rounds out of a hundred.)
func TestStopRightAfterRecordingHandlesEveryEvent(t *testing.T) {
	const perRound, rounds = 200, 300
	e := newBroadcaster(t)
	r := recorder(e)
	for range 20 { // the distributor has more to do each round: Stop lands mid-round more often
		e.StartEventWatcher(func(*v1.Event) {})
	}
	for round := range rounds {
		sink := &countingSink{}
		h := e.StartRecordingToSink(sink)
		for i := range perRound {
			r.Eventf(pod(fmt.Sprint("p", round, "-", i)), v1.EventTypeNormal, "Started", "event %d", i)
		}
		h.Stop()
		for range h.ResultChan() { // closed once the sink has handled its last event
		}
		if got := sink.n.Load(); got != perRound {
			t.Fatalf("round %d: the sink wrote %d of the %d events recorded before Stop", round, got, perRound)
		}
		if s := h.(*k8sadapter.Handle).Stats(); s.Queued != perRound || sinkFates(s) != perRound {
			t.Fatalf("round %d: the sink was owed %d events and counted %d fates, want %d: %+v", round, s.Queued, sinkFates(s), perRound, s)
		}
	}
	if s := e.Stats(); s.Created != uint64(rounds*perRound) {
		t.Errorf("Stats() = %+v, want every event created", s)
	}
}

// TestSinkQueueDropsAreLoggedPerBurst: a sink that falls behind by more
// than its queue loses events; the log says so once per burst, with the
// count, and the lines add up to DroppedSinkQueue. (client-go drops them
// silently; herald used to as well.) The recorder that drops writes the
// line: the first drop of a burst is logged at once, the rest of the
// burst by the next line due, here the last one, at Shutdown.
func TestSinkQueueDropsAreLoggedPerBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.Lines
		g := newGate()
		sink := &scriptSink{onCreate: func(_ int, e *v1.Event) (*v1.Event, error) { g.wait(); return e, nil }}
		e := k8sadapter.NewBroadcaster(k8sadapter.WithContext(logContext(&log)), k8sadapter.WithQueueLength(5))
		e.StartRecordingToSink(sink)
		r := recorder(e)
		n := 0
		burst := func() { // one event in the sink, 5 queued, 14 dropped
			for range 20 {
				r.Eventf(pod(fmt.Sprint("p", n)), v1.EventTypeNormal, "Started", "event %d", n)
				n++
				synctest.Wait()
			}
			g.let(6)
			synctest.Wait()
		}
		const line = "the watcher's queue is full"
		burst()
		if got := log.With(line); len(got) != 1 || !strings.Contains(got[0], `"dropped"=1 `) || !strings.Contains(got[0], `"watcher"="sink"`) {
			t.Fatalf("after a burst of drops: %q, want one line reporting the first", got)
		}
		burst() // at the same instant: counted, reported later
		if got := log.With(line); len(got) != 1 {
			t.Fatalf("after a second burst within the interval: %d lines, want 1", len(got))
		}
		g.release()
		join(t, e)
		got := log.With(line)
		if len(got) != 2 || !strings.Contains(got[1], `"dropped"=27`) {
			t.Errorf("after Shutdown: %q, want a last line reporting the other 27", got)
		}
		if s := e.Stats(); s.DroppedSinkQueue != 28 || s.Created != 12 || sinkFates(s) != s.Queued {
			t.Errorf("Stats() = %+v, want 28 dropped at the sink's queue, 12 created, all accounted for", s)
		}
	})
}

// TestSinkQueueDropsAreLoggedWhileTheSinkHangs: events dropped at the
// full queue of a sink that hangs in a call are logged at once, by the
// recorder that drops them, not when the sink next finishes an event: an
// operator reads why events are missing while it still hangs.
func TestSinkQueueDropsAreLoggedWhileTheSinkHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.Lines
		clk := testclocks.NewFakeClock(t0)
		g := newGate()
		sink := &scriptSink{onCreate: func(_ int, e *v1.Event) (*v1.Event, error) { g.wait(); return e, nil }}
		e := k8sadapter.NewBroadcaster(k8sadapter.WithContext(logContext(&log)), k8sadapter.WithQueueLength(5), k8sadapter.WithClock(clk))
		e.StartRecordingToSink(sink)
		r := recorder(e)
		const line = "the watcher's queue is full"
		n := 0
		record := func(events int) { // each about an object of its own: none folds
			for range events {
				r.Eventf(pod(fmt.Sprint("p", n)), v1.EventTypeNormal, "Started", "event %d", n)
				n++
				synctest.Wait() // the sink takes the first, and hangs in its create
			}
		}
		record(7) // one in the sink, 5 queued, the 7th dropped
		if got := log.With(line); len(got) != 1 || !strings.Contains(got[0], `"dropped"=1 `) {
			t.Fatalf("the sink hangs, 1 event dropped: %q, want a line reporting it now", got)
		}
		record(100)                // within the burst interval: counted
		clk.Step(10 * time.Second) // the drop log's burst interval
		record(1)                  // the next burst: its line reports those since the last
		if got := log.With(line); len(got) != 2 || !strings.Contains(got[1], `"dropped"=101`) {
			t.Fatalf("the sink still hangs, 101 more dropped over an interval: %q, want a second line reporting 101", got)
		}
		if s := e.Stats(); s.DroppedSinkQueue != 102 || s.Created != 0 {
			t.Errorf("Stats() = %+v, want 102 dropped at the sink's queue and the sink still in its first create", s)
		}
		g.release()
		join(t, e)
		if got := log.With(line); len(got) != 2 {
			t.Errorf("after Shutdown: %q, want no more lines: every drop was reported", got)
		}
	})
}

// TestRecordingAfterShutdownLogsOncePerBurst: every event recorded after
// Shutdown is refused and counted, and an operator reads one log line for
// the lot, not one per event.
func TestRecordingAfterShutdownLogsOncePerBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.Lines
		e := k8sadapter.NewBroadcaster(k8sadapter.WithContext(logContext(&log)))
		e.Shutdown()
		r := recorder(e)
		for i := range 10_000 {
			r.Eventf(pod("p"), v1.EventTypeNormal, "Late", "event %d", i)
		}
		if got := log.With("Unable to record event"); len(got) != 1 {
			t.Errorf("10000 events after Shutdown logged %d lines, want 1", len(got))
		}
		if s := e.Stats(); s.DroppedClosed != 10_000 || recorderFates(s) != s.Recorded {
			t.Errorf("Stats() = %+v, want 10000 refused after shutdown", s)
		}
	})
}

// TestStoppedWatchersAreNotKept: starting and stopping sinks and handlers
// over and over keeps the broadcaster's memory flat (it used to keep every
// watcher, its queue and its correlator, for Stats), and Stats still
// counts what the stopped ones did.
func TestStoppedWatchersAreNotKept(t *testing.T) {
	e := newBroadcaster(t)
	r := recorder(e)
	cycle := func(n int) {
		for i := range n {
			sink := e.StartRecordingToSink(&countingSink{})
			handler := e.StartEventWatcher(func(*v1.Event) {})
			r.Eventf(pod(fmt.Sprint("p", i)), v1.EventTypeNormal, "Started", "event %d", i)
			for _, w := range []interface{ Stop() }{sink, handler} {
				w.Stop()
			}
			for range sink.ResultChan() {
			}
			for range handler.ResultChan() {
			}
		}
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	cycle(100)
	before := heap()
	cycle(2000)
	after := heap()
	if growth := int64(after) - int64(before); growth > 2<<20 {
		t.Errorf("2000 started and stopped watcher pairs grew the heap by %d KiB, want it flat", growth>>10)
	}
	if s := e.Stats(); s.Created != 2100 || s.Handled != 2100 {
		t.Errorf("Stats() = %+v, want the stopped sinks' 2100 created and handlers' 2100 handled", s)
	}
}

// TestShutdownTimeoutBoundsShutdown: with a sink call that hangs,
// Shutdown returns after WithShutdownTimeout with the events waiting
// behind the call counted as abandoned and logged with their number; the
// event in the call gets its fate when the call returns, and the sink's
// goroutine then ends.
func TestShutdownTimeoutBoundsShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.Lines
		g := newGate()
		sink := &scriptSink{onCreate: func(_ int, e *v1.Event) (*v1.Event, error) { g.wait(); return e, nil }}
		e := k8sadapter.NewBroadcaster(k8sadapter.WithContext(logContext(&log)), k8sadapter.WithShutdownTimeout(5*time.Second))
		w := e.StartRecordingToSink(sink)
		r := recorder(e)
		for i := range 3 { // the first hangs in the sink, two wait behind it
			r.Eventf(pod(fmt.Sprint("p", i)), v1.EventTypeNormal, "Started", "event %d", i)
		}
		synctest.Wait()
		start := time.Now()
		e.Shutdown()
		if waited := time.Since(start); waited != 5*time.Second {
			t.Errorf("Shutdown returned after %v, want the 5s timeout", waited)
		}
		if got := log.With("shutdown deadline passed"); len(got) != 1 || !strings.Contains(got[0], `"abandoned"=2`) {
			t.Errorf("log %q, want one line saying the deadline passed, with the 2 events abandoned", got)
		}
		want := k8sadapter.Stats{Recorded: 3, Queued: 3, Abandoned: 2}
		if diff := cmp.Diff(want, e.Stats()); diff != "" {
			t.Errorf("Stats() as Shutdown returns (-want +got):\n%s", diff)
		}
		g.release()
		if _, ok := <-w.ResultChan(); ok {
			t.Fatal("ResultChan delivered an event")
		}
		want.Created = 1
		if diff := cmp.Diff(want, e.Stats()); diff != "" {
			t.Errorf("Stats() once the call returned (-want +got):\n%s", diff)
		}
		if got := sink.snapshot(); len(got) != 1 {
			t.Errorf("sink calls %v, want only the one in progress at the deadline", got)
		}
	})
}

// TestShutdownDeadlineAbandonsHandlerQueue: a handler still in a call
// when the shutdown deadline passes is given none of the events queued
// behind it: they are counted as HandlerAbandoned as soon as the call
// returns, and its goroutine ends. The deadline's log line says how many
// events the handlers still held.
func TestShutdownDeadlineAbandonsHandlerQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.Lines
		g := newGate()
		var calls atomic.Int64
		e := k8sadapter.NewBroadcaster(k8sadapter.WithContext(logContext(&log)))
		w := e.StartEventWatcher(func(*v1.Event) { calls.Add(1); g.wait() })
		r := recorder(e)
		for i := range 5 {
			r.Eventf(pod(fmt.Sprint("p", i)), v1.EventTypeNormal, "Started", "event %d", i)
		}
		synctest.Wait() // the handler holds the first
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := e.ShutdownContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("ShutdownContext = %v, want the deadline", err)
		}
		if got := log.With("shutdown deadline passed"); len(got) != 1 || !strings.Contains(got[0], `"heldByHandlers"=5`) {
			t.Errorf("log %q, want one line saying the handlers held 5 events", got)
		}
		g.release()
		if _, ok := <-w.ResultChan(); ok {
			t.Fatal("ResultChan delivered an event")
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("handler called %d times, want once: the deadline had passed before the others", n)
		}
		want := k8sadapter.Stats{Recorded: 5, Queued: 5, Handled: 1, HandlerAbandoned: 4}
		if diff := cmp.Diff(want, e.Stats()); diff != "" {
			t.Errorf("Stats() (-want +got):\n%s", diff)
		}
	})
}

// TestFoldHoldsUpTo64Repeats: a waiting event holds up to 64 repeats;
// the next one needs a place of its own, which a full queue refuses. With
// a queue of one place behind a hung sink call, 200 identical events are
// one in the call, one waiting with 64 repeats folded into it, and 134
// dropped, each counted.
func TestFoldHoldsUpTo64Repeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		sink := &scriptSink{onCreate: func(_ int, e *v1.Event) (*v1.Event, error) { g.wait(); return e, nil }}
		e := newBroadcaster(t, k8sadapter.WithQueueLength(1))
		e.StartRecordingToSink(sink)
		r := recorder(e)
		r.Event(pod("a"), v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
		synctest.Wait() // the sink holds it
		for range 199 {
			r.Event(pod("a"), v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
		}
		if s := e.Stats(); s.Folded != 64 || s.DroppedSinkQueue != 134 {
			t.Errorf("Stats() = %+v, want 64 folded, 134 dropped", s)
		}
		g.release()
		if err := e.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		s := e.Stats()
		if fates := s.Created + s.Patched + s.SpamSkipped + s.DroppedSinkQueue; fates != 200 {
			t.Errorf("Stats() = %+v: fates sum to %d, want 200", s, fates)
		}
	})
}

// TestNoCreateAfterDeadlineWhenPatchFindsEventGone: a repeat's Patch is
// in progress when the shutdown deadline passes, and answers NotFound
// (the event expired on the server). client-go would Create it; past the
// deadline herald starts no sink call: the event is abandoned, counted
// and logged, and a later Shutdown returns broadcast.ErrClosed.
func TestNoCreateAfterDeadlineWhenPatchFindsEventGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.Lines
		g := newGate()
		sink := &scriptSink{onPatch: func(_ int, e *v1.Event, _ []byte) (*v1.Event, error) {
			g.wait()
			return nil, apierrors.NewNotFound(v1.Resource("events"), e.Name)
		}}
		e := k8sadapter.NewBroadcaster(k8sadapter.WithContext(logContext(&log)))
		w := e.StartRecordingToSink(sink)
		r := recorder(e)
		r.Event(pod("a"), v1.EventTypeNormal, "Started", "hello")
		synctest.Wait() // created
		r.Event(pod("a"), v1.EventTypeNormal, "Started", "hello")
		synctest.Wait() // its Patch hangs
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := e.ShutdownContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("ShutdownContext = %v, want the deadline", err)
		}
		g.release()
		if _, ok := <-w.ResultChan(); ok {
			t.Fatal("ResultChan delivered an event")
		}
		if got := strings.Join(verbs(sink.snapshot()), " "); got != "create patch" {
			t.Errorf("sink calls %q, want no Create after the deadline", got)
		}
		if s := e.Stats(); s.Created != 1 || s.Abandoned != 1 || s.Patched != 0 || s.FailedRejected != 0 {
			t.Errorf("Stats() = %+v, want 1 created, 1 abandoned", s)
		}
		if got := log.With("Abandoning event: the shutdown deadline passed"); len(got) != 1 {
			t.Errorf("log %q, want one line for the abandoned event", got)
		}
		if err := e.ShutdownContext(context.Background()); !errors.Is(err, broadcast.ErrClosed) {
			t.Errorf("a later ShutdownContext = %v, want broadcast.ErrClosed: an event was abandoned", err)
		}
	})
}

// TestWriteErrorLinesNameTheEvent: a line about an event that could not
// be written names it by namespace and name, and carries neither its
// message nor its other fields (client-go logs the whole object), a
// deliberate difference the package doc lists.
func TestWriteErrorLinesNameTheEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.Lines
		sink := &scriptSink{onCreate: func(n int, e *v1.Event) (*v1.Event, error) {
			if n == 1 {
				return nil, errors.New("connection refused")
			}
			return e, nil
		}}
		e := k8sadapter.NewBroadcaster(k8sadapter.WithContext(logContext(&log)), k8sadapter.WithSleepDuration(time.Second))
		e.StartRecordingToSink(sink)
		recorder(e).Eventf(pod("web-0"), v1.EventTypeWarning, "Failed", "secret token %s", "s3cr3t")
		join(t, e)
		got := log.With("Unable to write event (may retry after sleeping)")
		if len(got) != 1 {
			t.Fatalf("log lines = %q, want one failed attempt", got)
		}
		if !strings.Contains(got[0], `"event"={"name"="web-0.`) || !strings.Contains(got[0], `"namespace"="baz"}`) {
			t.Errorf("line %q does not name the event by namespace and name", got[0])
		}
		if strings.Contains(got[0], "s3cr3t") || strings.Contains(got[0], "Failed") {
			t.Errorf("line %q carries the event's message or reason", got[0])
		}
	})
}
