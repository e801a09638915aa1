package events_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	clientevents "k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	testclock "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/internal/testkit"
	"github.com/heraldgo/herald/k8sadapter/events"
)

// TestShutdownAfterRecordingContextEndWritesOpenSeries is the usual
// controller ending: the recording context ends (a signal), then the
// deferred Shutdown runs. Shutdown promises every open series its final
// count; the series' later events, counted as SeriesObserved, reach the
// sink.
func TestShutdownAfterRecordingContextEndWritesOpenSeries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := trackerClientset()
		e := events.NewBroadcaster(&clientevents.EventSinkImpl{Interface: client.EventsV1()})
		ctx, cancel := context.WithCancel(quiet)
		if err := e.StartRecordingToSinkWithContext(ctx); err != nil {
			t.Fatal(err)
		}
		r := e.NewRecorder(scheme.Scheme, "c")
		const calls = 5
		for range calls {
			r.Eventf(pod("a"), nil, v1.EventTypeWarning, "BackOff", "Restarting", "x")
			if err := e.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		synctest.Wait() // the writer has seen its context end
		if err := e.ShutdownContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		list, err := client.EventsV1().Events("").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 || list.Items[0].Series == nil || list.Items[0].Series.Count != calls {
			t.Errorf("stored %d events (%+v), want one series of count %d; Stats() = %+v", len(list.Items), list.Items, calls, e.Stats())
		}
	})
}

// openSeries records, for each of names, a create and a patch that opens
// its series, then more events counted into it and not written yet.
func openSeries(t *testing.T, e *events.EventBroadcaster, r clientevents.EventRecorder, more int, names ...string) {
	t.Helper()
	for _, name := range names {
		for range 2 {
			r.Eventf(pod(name), nil, v1.EventTypeWarning, "BackOff", "Restarting", "x")
			if err := e.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		for range more {
			r.Eventf(pod(name), nil, v1.EventTypeWarning, "BackOff", "Restarting", "x")
		}
	}
	if err := e.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestShutdownDeadlineCountsUnwrittenSeries: when the shutdown's deadline
// passes while the final count of an open series is being written, the
// series left are not written, and not lost without a trace:
// SeriesUnwritten counts them, and a line logs them with the events the
// server does not have.
func TestShutdownDeadlineCountsUnwrittenSeries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.Lines
		s := newSink()
		e := events.NewBroadcaster(s)
		if err := e.StartRecordingToSinkWithContext(klog.NewContext(context.Background(), log.Logger())); err != nil {
			t.Fatal(err)
		}
		openSeries(t, e, e.NewRecorder(scheme.Scheme, "c"), 5, "a", "b", "c")
		release := make(chan struct{})
		s.setOnPatch(func() { <-release }) // the first final count hangs
		shutdownPastDeadline(t, e)
		close(release)
		synctest.Wait() // the writer has ended
		if st := e.Stats(); st.SeriesWrites != 1 || st.SeriesUnwritten != 2 || st.SeriesObserved != 15 {
			t.Errorf("Stats() = %+v, want 1 series written, 2 unwritten, 15 events observed", st)
		}
		if got := log.With("final counts of open series not written"); len(got) != 1 ||
			!strings.Contains(got[0], `"series"=2`) || !strings.Contains(got[0], `"eventsNotCounted"=10`) {
			t.Errorf("log %q, want one line with the 2 series and their 10 events", got)
		}
	})
}

// TestRecordingContextEndDuringFinalCounts: the recording context ends
// while Shutdown writes the open series' final counts (a controller's
// stop channel closes as its deferred Shutdown runs). No deadline passed:
// every series gets its final count.
func TestRecordingContextEndDuringFinalCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.Lines
		s := newSink()
		e := events.NewBroadcaster(s)
		ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), log.Logger()))
		defer cancel()
		if err := e.StartRecordingToSinkWithContext(ctx); err != nil {
			t.Fatal(err)
		}
		openSeries(t, e, e.NewRecorder(scheme.Scheme, "c"), 1, "a", "b")
		s.setOnPatch(cancel) // the first final count ends the recording context
		if err := e.ShutdownContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if st := e.Stats(); st.SeriesWrites != 2 || st.SeriesUnwritten != 0 {
			t.Errorf("Stats() = %+v, want both final counts written", st)
		}
		if got := log.With("not written"); len(got) != 0 {
			t.Errorf("log %q, want no line of counts not written", got)
		}
	})
}

// TestWriterMakesNoSinkCallAfterDeadline: the writer is in the create of
// a new series' first event, two more folded behind it, when the
// shutdown's deadline passes; once the create returns it abandons the
// two, without the patch that would have written them.
func TestWriterMakesNoSinkCallAfterDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		s := newSink()
		s.onCreate = func(int, *eventsv1.Event) error { <-release; return nil }
		e := events.NewBroadcaster(s)
		r := e.NewRecorder(scheme.Scheme, "c")
		for range 3 { // one entry: the first and two folded into it
			r.Eventf(pod("a"), nil, v1.EventTypeWarning, "BackOff", "Restarting", "x")
		}
		if err := e.StartRecordingToSinkWithContext(quiet); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the writer is in the create
		shutdownPastDeadline(t, e)
		close(release)
		synctest.Wait() // the writer has ended
		if calls, _ := s.snapshot(); verbs(calls) != "create" {
			t.Errorf("sink calls %q, want only the create in progress at the deadline", verbs(calls))
		}
		if st := e.Stats(); st.Created != 1 || st.Abandoned != 2 || st.Patched != 0 || st.Folded != 2 {
			t.Errorf("Stats() = %+v, want 1 created, the 2 folded events abandoned", st)
		}
	})
}

// TestFinishPassStopsAtDeadline: the writer is in the first write of a
// finish pass when the shutdown's deadline passes; once that call
// returns, the pass writes no other series.
func TestFinishPassStopsAtDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		e := events.NewBroadcaster(s)
		if err := e.StartRecordingToSinkWithContext(quiet); err != nil {
			t.Fatal(err)
		}
		openSeries(t, e, e.NewRecorder(scheme.Scheme, "c"), 0, "a", "b", "c")
		release := make(chan struct{})
		var patches atomic.Int64
		s.setOnPatch(func() {
			if patches.Add(1) == 1 {
				<-release
			}
		})
		time.Sleep(2 * events.FinishTime) // a finish pass finds the series idle
		synctest.Wait()
		if n := patches.Load(); n != 1 {
			t.Fatalf("patches = %d, want the finish pass in its first", n)
		}
		shutdownPastDeadline(t, e)
		close(release)
		synctest.Wait() // the writer has ended
		if n := patches.Load(); n != 1 {
			t.Errorf("patches = %d, want none after the one in progress at the deadline", n)
		}
	})
}

// TestShutdownDeadlineAbandonsQueues: when the shutdown's deadline
// passes while the sink and a handler are each stuck in a call, the
// events waiting in the writer's queue are Abandoned as ShutdownContext
// returns, and the handler is given none of the events queued behind its
// call (HandlerAbandoned); both goroutines end once their calls return.
func TestShutdownDeadlineAbandonsQueues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.Lines
		release := make(chan struct{})
		s := newSink()
		s.onCreate = func(int, *eventsv1.Event) error { <-release; return nil }
		e := events.NewBroadcaster(s, events.WithLogger(log.Logger()))
		if err := e.StartRecordingToSinkWithContext(quiet); err != nil {
			t.Fatal(err)
		}
		var calls atomic.Int64
		if _, err := e.StartEventWatcher(func(runtime.Object) { calls.Add(1); <-release }); err != nil {
			t.Fatal(err)
		}
		r := e.NewRecorder(scheme.Scheme, "c")
		for _, name := range []string{"a", "b", "c", "d"} {
			r.Eventf(pod(name), nil, v1.EventTypeWarning, "BackOff", "Restarting", "x")
		}
		synctest.Wait() // the sink and the handler each hold the first
		shutdownPastDeadline(t, e)
		if st := e.Stats(); st.Abandoned != 3 {
			t.Errorf("Stats().Abandoned = %d as ShutdownContext returns, want the 3 events queued behind the sink's call", st.Abandoned)
		}
		if got := log.With("shutdown deadline passed"); len(got) != 1 ||
			!strings.Contains(got[0], `"abandoned"=3`) || !strings.Contains(got[0], `"heldByHandlers"=4`) {
			t.Errorf("log %q, want one line with the 3 abandoned and the 4 the handler held", got)
		}
		close(release)
		synctest.Wait() // both goroutines have ended
		if n := calls.Load(); n != 1 {
			t.Errorf("handler called %d times, want once", n)
		}
		st := e.Stats()
		if st.Created != 1 || st.Abandoned != 3 || st.Handled != 1 || st.HandlerAbandoned != 3 {
			t.Errorf("Stats() = %+v, want 1 created, 3 abandoned, 1 handled, 3 abandoned by the handler", st)
		}
	})
}

// TestDefaultsAsDocumented: the defaults' docs give their values, which
// go doc does not show (they are set from an internal package's).
func TestDefaultsAsDocumented(t *testing.T) {
	if events.DefaultSleepDuration != 10*time.Second || events.DefaultMaxTries != 12 ||
		events.DefaultQueueLength != 1000 || events.DefaultShutdownTimeout != 10*time.Second {
		t.Errorf("defaults pause %v, %d tries, queue %d, shutdown %v; their docs say 10s, 12, 1000, 10s",
			events.DefaultSleepDuration, events.DefaultMaxTries, events.DefaultQueueLength, events.DefaultShutdownTimeout)
	}
}

// TestNoCreateAfterDeadlineWhenPatchFindsEventGone: a series' Patch is in
// progress when the shutdown deadline passes, and answers NotFound (the
// event expired on the server). client-go would Create it; past the
// deadline herald starts no sink call: the event is abandoned, and a
// later Shutdown returns broadcast.ErrClosed.
func TestNoCreateAfterDeadlineWhenPatchFindsEventGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		e := events.NewBroadcaster(s)
		if err := e.StartRecordingToSinkWithContext(quiet); err != nil {
			t.Fatal(err)
		}
		r := e.NewRecorder(scheme.Scheme, "c")
		r.Eventf(pod("a"), nil, v1.EventTypeWarning, "BackOff", "Restarting", "x")
		if err := e.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		s.setOnPatch(func() {
			<-release
			s.mu.Lock()
			clear(s.stored) // the event expired on the server meanwhile
			s.mu.Unlock()
		})
		r.Eventf(pod("a"), nil, v1.EventTypeWarning, "BackOff", "Restarting", "x")
		synctest.Wait() // the writer is in the Patch
		shutdownPastDeadline(t, e)
		close(release)
		synctest.Wait() // the writer has ended
		if calls, _ := s.snapshot(); verbs(calls) != "create patch" {
			t.Errorf("sink calls %q, want no Create after the deadline", verbs(calls))
		}
		if st := e.Stats(); st.Created != 1 || st.Abandoned != 1 || st.Patched != 0 || st.FailedRejected != 0 {
			t.Errorf("Stats() = %+v, want 1 created, 1 abandoned", st)
		}
		if err := e.ShutdownContext(context.Background()); !errors.Is(err, broadcast.ErrClosed) {
			t.Errorf("a later ShutdownContext = %v, want broadcast.ErrClosed: an event was abandoned", err)
		}
	})
}

// TestShutdownContextEndsWhileWritingFinalCounts: the recording context
// ended with two open series, so ShutdownContext writes their final
// counts itself; its context ends during the first (a slow server). The
// second is left unwritten, counted, and ShutdownContext returns the
// context's error, not nil.
func TestShutdownContextEndsWhileWritingFinalCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		e := events.NewBroadcaster(s)
		rctx, cancelRec := context.WithCancel(quiet)
		if err := e.StartRecordingToSinkWithContext(rctx); err != nil {
			t.Fatal(err)
		}
		openSeries(t, e, e.NewRecorder(scheme.Scheme, "c"), 2, "a", "b")
		cancelRec()
		synctest.Wait()                                      // the writer has stopped recording
		s.setOnPatch(func() { time.Sleep(2 * time.Second) }) // the bubble's clock: a slow server
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := e.ShutdownContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("ShutdownContext = %v, want the deadline: its context ended while it wrote", err)
		}
		if st := e.Stats(); st.SeriesWrites != 1 || st.SeriesUnwritten != 1 {
			t.Errorf("Stats() = %+v, want 1 final count written, 1 unwritten", st)
		}
	})
}

// TestDistinctEventsAtOneInstantAreAllStored: with WithClock's fake clock
// standing still, two different events about one object would get one
// name, and the server would refuse the second (AlreadyExists). herald
// names the second a nanosecond later: client-go's fake clientset, behind
// client-go's own sink, stores both.
func TestDistinctEventsAtOneInstantAreAllStored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := trackerClientset()
		clk := testclock.NewFakeClock(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
		e := events.NewBroadcaster(&clientevents.EventSinkImpl{Interface: client.EventsV1()}, events.WithClock(clk))
		if err := e.StartRecordingToSinkWithContext(quiet); err != nil {
			t.Fatal(err)
		}
		r := e.NewRecorder(scheme.Scheme, "c")
		r.Eventf(pod("web"), nil, v1.EventTypeNormal, "Scheduled", "Binding", "assigned")
		r.Eventf(pod("web"), nil, v1.EventTypeNormal, "Pulled", "Pulling", "pulled")
		if err := e.ShutdownContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		list, err := client.EventsV1().Events("").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s := e.Stats(); len(list.Items) != 2 || s.Created != 2 || s.FailedRejected != 0 {
			t.Errorf("stored %d events, Stats() = %+v; want both created", len(list.Items), s)
		}
	})
}

// shutdownPastDeadline calls ShutdownContext with a context that ends a
// second later, while the writer is held in a sink call, and checks that
// it returns at that deadline.
func shutdownPastDeadline(t *testing.T, e *events.EventBroadcaster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := e.ShutdownContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ShutdownContext = %v, want the deadline", err)
	}
}

// heedingSink is a sink whose Create waits for its context to end: what
// a client does with a request the server never answers.
type heedingSink struct {
	*sink
	ended chan error // what the context's Err was when Create returned
}

func (s *heedingSink) Create(ctx context.Context, _ *eventsv1.Event) (*eventsv1.Event, error) {
	<-ctx.Done()
	s.ended <- ctx.Err()
	return nil, ctx.Err()
}

// TestSinkCallContextEndsAtDeadline: the context a sink call takes ends
// when the shutdown's deadline passes, though the recording context has
// not: a sink that heeds it returns then, and the writer's goroutine ends
// with the event in the call failed for the shutdown, without waiting
// for the recording context.
func TestSinkCallContextEndsAtDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &heedingSink{sink: newSink(), ended: make(chan error, 1)}
		e := events.NewBroadcaster(s)
		if err := e.StartRecordingToSinkWithContext(quiet); err != nil { // never ends
			t.Fatal(err)
		}
		e.NewRecorder(scheme.Scheme, "c").Eventf(pod("a"), nil, v1.EventTypeWarning, "BackOff", "Restarting", "x")
		synctest.Wait() // the writer is in the create
		shutdownPastDeadline(t, e)
		if err := <-s.ended; !errors.Is(err, context.Canceled) {
			t.Errorf("the create's context ended with %v, want it canceled at the deadline", err)
		}
		if err := e.ShutdownContext(context.Background()); !errors.Is(err, broadcast.ErrClosed) {
			t.Errorf("ShutdownContext after the writer ended = %v, want broadcast.ErrClosed at once", err)
		}
		if st := e.Stats(); st.FailedShutdown != 1 || writerFates(st) != st.Queued {
			t.Errorf("Stats() = %+v, want the event in the call failed for the shutdown", st)
		}
	})
}
