package events_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	testclocks "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/internal/testkit"
	"github.com/heraldgo/herald/k8sadapter/events"
)

// writerFates is the sum of the writer's fate counters (see Stats).
func writerFates(s events.Stats) uint64 {
	return s.Created + s.Patched + s.SeriesObserved + s.DroppedSinkQueue + s.FailedConstruction + s.FailedRejected + s.FailedForbidden +
		s.FailedRetries + s.FailedShutdown + s.FailedPanic + s.Abandoned
}

// TestTypedNilRegardingIsRefused: a typed nil *v1.ObjectReference as the
// regarding object is refused and counted, never a panic in the caller's
// goroutine; as the related object it is left out, as a nil one is.
func TestTypedNilRegardingIsRefused(t *testing.T) {
	s := newSink()
	e, r := start(t, s)
	var ref *v1.ObjectReference
	r.Eventf(ref, nil, v1.EventTypeNormal, "Started", "Starting", "typed nil regarding")
	r.Eventf(pod("a"), ref, v1.EventTypeNormal, "Started", "Starting", "typed nil related")
	e.Shutdown()
	want := events.Stats{Recorded: 2, Queued: 1, InvalidObject: 1, Created: 1}
	if diff := cmp.Diff(want, e.Stats()); diff != "" {
		t.Errorf("Stats() (-want +got):\n%s", diff)
	}
	if _, stored := s.snapshot(); len(stored) != 1 || stored[0].Related != nil {
		t.Errorf("stored %+v, want one event without a related object", stored)
	}
}

// TestRecordingContextEnd: when the recording context ends, the events
// queued for the writer and those recorded later are not lost without a
// count: they wait, and either a new recording writes them or Shutdown
// counts them as abandoned.
func TestRecordingContextEnd(t *testing.T) {
	for _, then := range []string{"shutdown", "record again"} {
		t.Run(then, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				s := newSink()
				s.onCreate = func(n int, _ *eventsv1.Event) error {
					if n == 1 {
						<-release // the first create is in flight when the context ends
					}
					return nil
				}
				e := events.NewBroadcaster(s)
				ctx, cancel := context.WithCancel(quiet)
				if err := e.StartRecordingToSinkWithContext(ctx); err != nil {
					t.Fatal(err)
				}
				r := e.NewRecorder(scheme.Scheme, "c")
				for _, name := range []string{"a", "b", "c"} { // a in the sink, b and c queued
					r.Eventf(pod(name), nil, v1.EventTypeNormal, "Started", "Starting", "x")
					synctest.Wait()
				}
				cancel()
				close(release)
				synctest.Wait()
				r.Eventf(pod("d"), nil, v1.EventTypeNormal, "Started", "Starting", "after the end")
				synctest.Wait()
				if then == "record again" {
					if err := e.StartRecordingToSinkWithContext(quiet); err != nil {
						t.Fatalf("recording again: %v", err)
					}
					synctest.Wait()
				}
				if err := e.ShutdownContext(context.Background()); err != nil {
					t.Fatal(err)
				}
				want := events.Stats{Recorded: 4, Queued: 4, Created: 1, Abandoned: 3}
				if then == "record again" {
					want = events.Stats{Recorded: 4, Queued: 4, Created: 4}
				}
				st := e.Stats()
				if diff := cmp.Diff(want, st); diff != "" {
					t.Errorf("Stats() (-want +got):\n%s", diff)
				}
				if writerFates(st) != st.Queued {
					t.Errorf("%d queued events, %d fates", st.Queued, writerFates(st))
				}
			})
		})
	}
}

// TestLoggersAreRaceFree: recorders and loggers started while recording
// starts read no logger the recording writes (they log to klog's global
// logger, as client-go's do), and the writer logs to the logger of its
// context.
func TestLoggersAreRaceFree(t *testing.T) {
	var log testkit.Lines
	s := newSink()
	s.onCreate = func(n int, _ *eventsv1.Event) error {
		if n == 1 {
			return fmt.Errorf("connection refused")
		}
		return nil
	}
	e := events.NewBroadcaster(s, events.WithSleepDuration(0))
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 50 {
			e.NewRecorder(scheme.Scheme, "c")
			e.StartStructuredLogging(10)()
		}
	})
	wg.Go(func() {
		if err := e.StartRecordingToSinkWithContext(klog.NewContext(context.Background(), log.Logger())); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	e.NewRecorder(scheme.Scheme, "c").Eventf(pod("a"), nil, v1.EventTypeNormal, "Started", "Starting", "x")
	e.Shutdown()
	if got := log.With("Unable to write event (may retry after sleeping)"); len(got) != 1 {
		t.Errorf("the recording context's logger got %q, want the one failed attempt", got)
	}
}

// TestStartRecordingWithNilContext: a nil context is an error, not a
// panic, and leaves the broadcaster as it was.
func TestStartRecordingWithNilContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		e := events.NewBroadcaster(s)
		//lint:ignore SA1012 a nil context is the point of the test
		if err := e.StartRecordingToSinkWithContext(nil); err == nil {
			t.Error("StartRecordingToSinkWithContext(nil) = nil, want an error")
		}
		if err := e.StartRecordingToSinkWithContext(quiet); err != nil {
			t.Errorf("then StartRecordingToSinkWithContext(ctx) = %v", err)
		}
		e.NewRecorder(scheme.Scheme, "c").Eventf(pod("a"), nil, v1.EventTypeNormal, "Started", "Starting", "x")
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := e.ShutdownContext(ctx); err != nil {
			t.Errorf("ShutdownContext = %v, want nil", err)
		}
		if calls, _ := s.snapshot(); len(calls) != 1 {
			t.Errorf("sink calls %q, want one create", verbs(calls))
		}
	})
}

// TestQueueFullDropsAreLoggedPerBurst: events refused at the handlers'
// full queue are counted (as dropped by the handler, which the writer's
// events are not), and logged once per burst with a count, not once each.
// The clock never moves here: one burst.
func TestQueueFullDropsAreLoggedPerBurst(t *testing.T) {
	var log testkit.Lines
	clk := testclocks.NewFakeClock(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	e := events.NewBroadcaster(newSink(), events.WithQueueLength(1), events.WithClock(clk))
	if err := e.StartRecordingToSinkWithContext(quiet); err != nil {
		t.Fatal(err)
	}
	if _, err := e.StartEventWatcher(func(k8sruntime.Object) {}); err != nil { // the handlers' queue exists
		t.Fatal(err)
	}
	r := e.NewRecorder(scheme.Scheme, "c").WithLogger(log.Logger())
	refused := func() bool { return len(log.With("too many queued events")) > 0 }
	var wg sync.WaitGroup
	for g := range 2 { // two recorders outrun the distributor of a queue of one
		wg.Go(func() {
			for i := 0; i < 200_000; i++ {
				r.Eventf(pod(fmt.Sprint("p", g, "-", i)), nil, v1.EventTypeNormal, "Started", "Starting", "x")
				if i%100 == 0 && refused() && e.Stats().DroppedWatcherQueue >= 100 {
					return
				}
			}
		})
	}
	wg.Wait()
	if !refused() {
		t.Fatal("no event was refused at the full queue; the test proves nothing")
	}
	if got := log.With("too many queued events"); len(got) != 1 {
		t.Errorf("refusals at a full queue logged %d lines, want 1", len(got))
	}
	e.Shutdown()
	if st := e.Stats(); st.Handled+st.DroppedWatcherQueue != st.Queued || writerFates(st) != st.Queued {
		t.Errorf("Stats() = %+v, want every event handled or dropped by the handler, and in one of the writer's fates", st)
	}
}

// TestRecordingAfterShutdownLogsOncePerBurst: every event recorded after
// Shutdown is refused and counted, with one log line for the lot.
func TestRecordingAfterShutdownLogsOncePerBurst(t *testing.T) {
	var log testkit.Lines
	e := events.NewBroadcaster(newSink())
	e.Shutdown()
	r := e.NewRecorder(scheme.Scheme, "c").WithLogger(log.Logger())
	for i := range 10_000 {
		r.Eventf(pod("a"), nil, v1.EventTypeNormal, "Late", "Recording", "event %d", i)
	}
	if got := log.With("Unable to record event"); len(got) != 1 {
		t.Errorf("10000 events after Shutdown logged %d lines, want 1", len(got))
	}
	if st := e.Stats(); st.DroppedClosed != 10_000 || st.Recorded != 10_000 {
		t.Errorf("Stats() = %+v, want 10000 refused after shutdown", st)
	}
}

// TestStoppedHandlersAreNotKept: starting and stopping handlers over and
// over keeps the broadcaster's memory flat, and Stats still counts what
// they did.
func TestStoppedHandlersAreNotKept(t *testing.T) {
	e, r := start(t, &countingSink{}, events.WithCacheSize(1)) // neither keeps events
	cycle := func(n int) {
		for i := range n {
			handled := make(chan struct{})
			stop, err := e.StartEventWatcher(func(k8sruntime.Object) { close(handled) })
			if err != nil {
				t.Fatal(err)
			}
			r.Eventf(pod(fmt.Sprint("p", i)), nil, v1.EventTypeNormal, "Started", "Starting", "x")
			<-handled
			stop()
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
	if growth := int64(heap()) - int64(before); growth > 4<<20 {
		t.Errorf("2000 started and stopped handlers grew the heap by %d KiB, want it flat", growth>>10)
	}
	if err := e.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(); st.Handled != 2100 {
		t.Errorf("Handled = %d, want the stopped handlers' 2100", st.Handled)
	}
}

// TestStartRecordingToSinkWithStopChannel: the deprecated client-go entry
// point records until stopCh is closed, with WithMaxTries attempts per
// event; what is recorded after the close waits, and Shutdown, bounded by
// WithShutdownTimeout, counts it as abandoned.
func TestStartRecordingToSinkWithStopChannel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		s.onCreate = func(n int, _ *eventsv1.Event) error {
			if n == 1 {
				return fmt.Errorf("connection refused")
			}
			return nil
		}
		e := events.NewBroadcaster(s, events.WithMaxTries(2), events.WithSleepDuration(time.Second), events.WithShutdownTimeout(time.Minute))
		stopCh := make(chan struct{})
		e.StartRecordingToSink(stopCh)
		r := e.NewRecorder(scheme.Scheme, "c").WithLogger(logr.Discard())
		r.Eventf(pod("a"), nil, v1.EventTypeNormal, "Started", "Starting", "x")
		time.Sleep(time.Hour) // past the retry pause
		synctest.Wait()
		close(stopCh)
		synctest.Wait()
		r.Eventf(pod("b"), nil, v1.EventTypeNormal, "Started", "Starting", "after the stop")
		e.Shutdown()
		want := events.Stats{Recorded: 2, Queued: 2, Created: 1, Retries: 1, Abandoned: 1}
		if diff := cmp.Diff(want, e.Stats()); diff != "" {
			t.Errorf("Stats() (-want +got):\n%s", diff)
		}
	})
}
