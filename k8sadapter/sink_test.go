package k8sadapter_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/k8sadapter"
)

func TestSinkErrorClasses(t *testing.T) {
	terminating := &apierrors.StatusError{ErrStatus: metav1.Status{
		Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: v1.NamespaceTerminatingCause}}},
	}}
	tests := []struct {
		name      string
		err       error
		failTimes int // then succeed
		attempts  int
		want      k8sadapter.Stats // besides the one event recorded and queued
	}{
		{"request construction", &rest.RequestConstructionError{Err: errors.New("bad")}, 1000, 1, k8sadapter.Stats{FailedConstruction: 1}},
		{"empty status error", &apierrors.StatusError{}, 1000, 1, k8sadapter.Stats{FailedRejected: 1}},
		{"already exists", apierrors.NewAlreadyExists(schema.GroupResource{Resource: "events"}, "x"), 1000, 1, k8sadapter.Stats{FailedRejected: 1}},
		{"namespace terminating", terminating, 1000, 1, k8sadapter.Stats{FailedRejected: 1}},
		{"server overloaded (final, as in client-go)", apierrors.NewTooManyRequests("slow down", 1), 1000, 1, k8sadapter.Stats{FailedRejected: 1}},
		{"unexpected object", &apierrors.UnexpectedObjectError{}, 1000, 12, k8sadapter.Stats{FailedRetries: 1, Retries: 11}},
		{"transport error", errors.New("connection refused"), 1000, 12, k8sadapter.Stats{FailedRetries: 1, Retries: 11}},
		{"wrapped status error (retried, as in client-go)", fmt.Errorf("wrapped: %w", &apierrors.StatusError{}), 1000, 12, k8sadapter.Stats{FailedRetries: 1, Retries: 11}},
		{"fails once then succeeds", errors.New("blip"), 1, 2, k8sadapter.Stats{Created: 1, Retries: 1}},
		{"fails twice then succeeds", errors.New("blip"), 2, 3, k8sadapter.Stats{Created: 1, Retries: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := &scriptSink{onCreate: func(n int, e *v1.Event) (*v1.Event, error) {
					if n <= tc.failTimes {
						return nil, tc.err
					}
					return e, nil
				}}
				e := newBroadcaster(t) // default pauses: 10 s, on the bubble's clock
				e.StartRecordingToSink(sink)
				recorder(e).Event(pod("foo"), v1.EventTypeNormal, "Started", "hello")
				settle() // every attempt made
				if got := len(sink.snapshot()); got != tc.attempts {
					t.Errorf("attempts = %d, want %d", got, tc.attempts)
				}
				want := tc.want
				want.Recorded, want.Queued = 1, 1
				if diff := cmp.Diff(want, e.Stats()); diff != "" {
					t.Errorf("Stats() (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// TestRetryPauses checks client-go's timing: the first pause is a random
// fraction of the sleep duration, every later one the full duration.
func TestRetryPauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var at []time.Time
		sink := &scriptSink{onCreate: func(int, *v1.Event) (*v1.Event, error) {
			at = append(at, time.Now())
			return nil, errors.New("down")
		}}
		e := newBroadcaster(t, k8sadapter.WithSleepDuration(10*time.Second), k8sadapter.WithMaxTries(5))
		e.StartRecordingToSink(sink)
		recorder(e).Event(pod("foo"), v1.EventTypeNormal, "Started", "hello")
		settle()
		if len(at) != 5 {
			t.Fatalf("attempts = %d, want 5 (WithMaxTries)", len(at))
		}
		if first := at[1].Sub(at[0]); first < 0 || first >= 10*time.Second {
			t.Errorf("first pause %v, want within [0, 10s)", first)
		}
		for i := 2; i < len(at); i++ {
			if d := at[i].Sub(at[i-1]); d != 10*time.Second {
				t.Errorf("pause %d = %v, want 10s", i, d)
			}
		}
	})
}

func TestPatchOfVanishedEventCreatesWithoutResourceVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &scriptSink{onPatch: func(int, *v1.Event, []byte) (*v1.Event, error) {
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "events"}, "gone")
		}}
		e := newBroadcaster(t, k8sadapter.WithSleepDuration(0))
		e.StartRecordingToSink(sink)
		r := recorder(e)
		r.Event(pod("foo"), v1.EventTypeNormal, "Started", "hello")
		r.Event(pod("foo"), v1.EventTypeNormal, "Started", "hello")
		synctest.Wait()
		calls := sink.snapshot()
		if len(calls) != 3 || calls[0].verb != "create" || calls[1].verb != "patch" || calls[2].verb != "create" {
			t.Fatalf("calls = %v, want create, patch, create", verbs(calls))
		}
		if rv := calls[1].event.ResourceVersion; rv != "1" {
			t.Errorf("patch carried resourceVersion %q, want the stored %q", rv, "1")
		}
		if rv := calls[2].event.ResourceVersion; rv != "" {
			t.Errorf("create after 404 carried resourceVersion %q, want none", rv)
		}
		if c := calls[2].event.Count; c != 2 {
			t.Errorf("re-created event has count %d, want 2", c)
		}
		if s := e.Stats(); s.Created != 2 || s.Patched != 0 || s.Deduplicated != 1 {
			t.Errorf("Stats() = %+v, want 2 created, 1 deduplicated", s)
		}
	})
}

// settle lets the bubble's fake time run on an hour, past every retry
// pause, and waits until every goroutine is idle again. Inside a synctest
// bubble this takes no real time.
func settle() {
	time.Sleep(time.Hour)
	synctest.Wait()
}

func verbs(calls []call) []string {
	var v []string
	for _, c := range calls {
		v = append(v, c.verb)
	}
	return v
}

// TestShutdownGivesFailingEventsOneAttempt: once shutdown began, an event
// that fails is not retried, and the pause of one that was waiting ends.
func TestShutdownGivesFailingEventsOneAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &scriptSink{onCreate: func(int, *v1.Event) (*v1.Event, error) { return nil, errors.New("down") }}
		e := newBroadcaster(t)
		e.StartRecordingToSink(sink)
		r := recorder(e)
		r.Event(pod("a"), v1.EventTypeNormal, "Started", "a")
		synctest.Wait() // a failed once and waits to retry
		r.Event(pod("b"), v1.EventTypeNormal, "Started", "b")
		r.Event(pod("c"), v1.EventTypeNormal, "Started", "c")
		start := time.Now()
		if err := e.ShutdownContext(context.Background()); err != nil {
			t.Fatalf("ShutdownContext: %v", err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("Shutdown waited %v for a retry pause", waited)
		}
		if got := len(sink.snapshot()); got != 3 {
			t.Errorf("attempts = %d, want 3 (one per event)", got)
		}
		if s := e.Stats(); s.FailedShutdown != 3 {
			t.Errorf("FailedShutdown = %d, want 3", s.FailedShutdown)
		}
	})
}

func TestSinkPanicIsContained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &scriptSink{onCreate: func(n int, e *v1.Event) (*v1.Event, error) {
			if n == 1 {
				panic("sink bug")
			}
			return e, nil
		}}
		e := newBroadcaster(t)
		e.StartRecordingToSink(sink)
		r := recorder(e)
		r.Event(pod("a"), v1.EventTypeNormal, "Started", "a")
		r.Event(pod("b"), v1.EventTypeNormal, "Started", "b")
		synctest.Wait()
		if s := e.Stats(); s.FailedPanic != 1 || s.Created != 1 {
			t.Errorf("Stats() = %+v, want 1 panic and 1 created", s)
		}
	})
}

func TestSinkReturningNothingIsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &scriptSink{onCreate: func(int, *v1.Event) (*v1.Event, error) { return nil, nil }}
		e := newBroadcaster(t)
		e.StartRecordingToSink(sink)
		r := recorder(e)
		r.Event(pod("a"), v1.EventTypeNormal, "Started", "a")
		r.Event(pod("a"), v1.EventTypeNormal, "Started", "a")
		synctest.Wait()
		s := e.Stats()
		if s.NilResponses != 1 || s.Created != 1 || s.Patched != 1 {
			t.Errorf("Stats() = %+v, want 1 nil response, 1 created, 1 patched", s)
		}
		calls := sink.snapshot()
		if len(calls) != 2 || calls[1].verb != "patch" || calls[1].event.Name != calls[0].event.Name {
			t.Errorf("calls = %v; the repeat must patch the event created first", verbs(calls))
		}
	})
}

// TestHangingSinkHoldsOnlyItsOwnQueue: a sink call that never returns
// stops that sink, not the others, and Shutdown still returns at its
// deadline.
func TestHangingSinkHoldsOnlyItsOwnQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var once sync.Once
		hung := &scriptSink{onCreate: func(_ int, e *v1.Event) (*v1.Event, error) {
			<-release
			return e, nil
		}}
		fine := &scriptSink{}
		e := k8sadapter.NewBroadcaster(quiet, k8sadapter.WithQueueLength(5))
		e.StartRecordingToSink(hung)
		e.StartRecordingToSink(fine)
		r := recorder(e)
		for i := range 10 {
			r.Eventf(pod(fmt.Sprint("p", i)), v1.EventTypeNormal, "Started", "event %d", i)
			synctest.Wait() // each event reaches the queues before the next
		}
		if got := len(fine.snapshot()); got != 10 {
			t.Errorf("healthy sink got %d events, want 10", got)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := e.ShutdownContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("ShutdownContext = %v, want DeadlineExceeded", err)
		}
		once.Do(func() { close(release) })
		if err := e.ShutdownContext(context.Background()); !errors.Is(err, broadcast.ErrClosed) {
			t.Errorf("second ShutdownContext = %v, want broadcast.ErrClosed once the sink returned: events were abandoned", err)
		}
		s := e.Stats()
		// The hung sink: event 0 written once released, events 1-5 queued
		// and then abandoned at the deadline, events 6-9 dropped because its
		// queue of 5 was full.
		if s.Created != 11 || s.Abandoned != 5 || s.DroppedSinkQueue != 4 {
			t.Errorf("Stats() = %+v, want 11 created, 5 abandoned, 4 dropped at the full queue", s)
		}
	})
}

// TestShutdownFlushes records 1000 events on distinct objects and shuts
// down at once: every event reaches the sink.
func TestShutdownFlushes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &scriptSink{onCreate: func(_ int, e *v1.Event) (*v1.Event, error) {
			time.Sleep(time.Millisecond) // a real apiserver takes a while
			return e, nil
		}}
		e := k8sadapter.NewBroadcaster(quiet)
		e.StartRecordingToSink(sink)
		r := recorder(e)
		for i := range 1000 {
			r.Eventf(pod(fmt.Sprint("p", i)), v1.EventTypeNormal, "Started", "event %d", i)
		}
		e.Shutdown()
		if got := len(sink.snapshot()); got != 1000 {
			t.Errorf("sink got %d events, want 1000", got)
		}
		if s := e.Stats(); s.Created != 1000 || s.Queued != 1000 || s.Recorded != 1000 {
			t.Errorf("Stats() = %+v", s)
		}
	})
}

// TestContextCancelShutsDown: cancelling the WithContext context shuts the
// broadcaster down as Shutdown does, flush included.
func TestContextCancelShutsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
		sink := &scriptSink{}
		e := k8sadapter.NewBroadcaster(k8sadapter.WithContext(ctx))
		e.StartRecordingToSink(sink)
		r := recorder(e)
		for i := range 10 {
			r.Eventf(pod(fmt.Sprint("p", i)), v1.EventTypeNormal, "Started", "event %d", i)
		}
		cancel()
		synctest.Wait() // the shutdown the cancel started has finished
		if got := len(sink.snapshot()); got != 10 {
			t.Errorf("sink got %d events, want 10 (flushed)", got)
		}
		r.Event(pod("late"), v1.EventTypeNormal, "Late", "after cancel")
		if s := e.Stats(); s.DroppedClosed != 1 || s.Created != 10 {
			t.Errorf("Stats() = %+v, want 10 created and 1 refused after shutdown", s)
		}
		if w := e.StartEventWatcher(func(*v1.Event) {}); w == nil {
			t.Error("StartEventWatcher after cancel returned nil")
		}
	})
}

// TestStatsShowRetriesWhileTheyRun: an event the apiserver keeps refusing
// is retried for minutes; Stats count each retry as it happens, not only
// once the event's fate is known, so an operator sees the outage.
func TestStatsShowRetriesWhileTheyRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &scriptSink{onCreate: func(int, *v1.Event) (*v1.Event, error) { return nil, errors.New("down") }}
		e := newBroadcaster(t, k8sadapter.WithSleepDuration(10*time.Second))
		e.StartRecordingToSink(sink)
		recorder(e).Event(pod("foo"), v1.EventTypeNormal, "Started", "hello")
		// Fake time: the first pause is random within 10 s, the others
		// 10 s, so by 35 s three or four pauses have ended, of eleven.
		time.Sleep(35 * time.Second)
		synctest.Wait()
		if s := e.Stats(); s.Retries < 3 || s.Retries > 4 || s.FailedRetries != 0 {
			t.Errorf("Stats() during the retries = %+v, want Retries 3 or 4 and no fate yet", s)
		}
	})
}
