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

	"github.com/heraldgo/herald/internal/testlog"
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

// TestShutdownDeadlineCountsUnwrittenSeries: when the shutdown's deadline
// has passed before the final counts of the open series are written, they
// are not written, and not lost without a trace: SeriesUnwritten counts
// the series, and a line logs them with the events the server does not
// have.
func TestShutdownDeadlineCountsUnwrittenSeries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testlog.Lines
		s := newSink()
		e := events.NewBroadcaster(s)
		if err := e.StartRecordingToSinkWithContext(klog.NewContext(context.Background(), log.Logger())); err != nil {
			t.Fatal(err)
		}
		r := e.NewRecorder(scheme.Scheme, "c")
		for _, name := range []string{"a", "b", "c"} {
			for range 2 { // a create, then a patch that opens the series
				r.Eventf(pod(name), nil, v1.EventTypeWarning, "BackOff", "Restarting", "x")
				if err := e.Flush(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			for range 5 { // counted into the open series, written by a later pass
				r.Eventf(pod(name), nil, v1.EventTypeWarning, "BackOff", "Restarting", "x")
			}
		}
		if err := e.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := e.ShutdownContext(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("ShutdownContext = %v, want the ended context's error", err)
		}
		synctest.Wait() // the writer has ended
		if st := e.Stats(); st.SeriesUnwritten != 3 || st.SeriesWrites != 0 || st.SeriesObserved != 15 {
			t.Errorf("Stats() = %+v, want 3 series unwritten, none written, 15 observed", st)
		}
		if got := log.With("final counts of open series not written"); len(got) != 1 ||
			!strings.Contains(got[0], `"series"=3`) || !strings.Contains(got[0], `"eventsNotCounted"=15`) {
			t.Errorf("log %q, want one line with the 3 series and the 15 events", got)
		}
		_, stored := s.snapshot()
		for _, ev := range stored {
			if ev.Series == nil || ev.Series.Count != 2 {
				t.Errorf("stored %s with series %+v, want the count of 2 its patch wrote", ev.Regarding.Name, ev.Series)
			}
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
		var log testlog.Lines
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
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := e.ShutdownContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("ShutdownContext = %v, want the deadline", err)
		}
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
