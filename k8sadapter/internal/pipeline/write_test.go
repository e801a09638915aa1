package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	"k8s.io/utils/clock"

	"github.com/heraldgo/herald/internal/testkit"
	"github.com/heraldgo/herald/k8sadapter/internal/kube"
)

func TestClassOf(t *testing.T) {
	tests := []struct {
		err  error
		want Class
	}{
		{&rest.RequestConstructionError{Err: errors.New("bad")}, Construction},
		{&apierrors.StatusError{}, Rejected},
		{apierrors.NewTooManyRequests("slow down", 1), Rejected},
		{apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "web-0.1", errors.New("no rule")), Forbidden},
		{&apierrors.StatusError{ErrStatus: metav1.Status{Code: 403}}, Forbidden},
		{&apierrors.StatusError{ErrStatus: metav1.Status{ // the 403 of a terminating namespace
			Code: 403, Reason: metav1.StatusReasonForbidden,
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: v1.NamespaceTerminatingCause}}},
		}}, Rejected},
		{&kube.SinkPanic{Value: "bug"}, Panicked},
		{&apierrors.UnexpectedObjectError{}, Retry},
		{errors.New("connection refused"), Retry},
		{fmt.Errorf("wrapped: %w", &apierrors.StatusError{}), Retry}, // client-go matches the type, not the chain
	}
	for _, tc := range tests {
		if got := ClassOf(tc.err); got != tc.want {
			t.Errorf("ClassOf(%T) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// script answers attempts from a list of errors, then succeeds.
type script struct {
	errs     []error
	nothing  bool // succeed with neither event nor error
	attempts []time.Time
}

func (s *script) attempt(ev *v1.Event) (*v1.Event, bool, error) {
	s.attempts = append(s.attempts, time.Now())
	if n := len(s.attempts); n <= len(s.errs) {
		return nil, true, s.errs[n-1]
	}
	if s.nothing {
		return nil, true, nil
	}
	return ev, ev.Count == 1, nil
}

func repeat(err error, n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// TestWriterFates runs each way a write can end through a Writer whose
// pause is a fixed 10 s on the bubble's clock: each ends in exactly the
// counts it should, after exactly the attempts it should.
func TestWriterFates(t *testing.T) {
	down := errors.New("connection refused")
	tests := []struct {
		name     string
		ev       v1.Event
		script   script
		written  bool
		attempts int
		want     Counts
	}{
		{"created", v1.Event{Count: 1}, script{}, true, 1, Counts{Created: 1}},
		{"patched", v1.Event{Count: 2}, script{}, true, 1, Counts{Patched: 1}},
		{"neither event nor error", v1.Event{Count: 1}, script{nothing: true}, true, 1, Counts{Created: 1, NilResponses: 1}},
		{"construction", v1.Event{Count: 1}, script{errs: []error{&rest.RequestConstructionError{}}}, false, 1, Counts{FailedConstruction: 1}},
		{"rejected", v1.Event{Count: 1}, script{errs: []error{&apierrors.StatusError{}}}, false, 1, Counts{FailedRejected: 1}},
		{"forbidden", v1.Event{Count: 1}, script{errs: []error{apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "e", errors.New("no rule"))}},
			false, 1, Counts{FailedForbidden: 1}},
		{"panicked", v1.Event{Count: 1}, script{errs: []error{&kube.SinkPanic{}}}, false, 1, Counts{FailedPanic: 1}},
		{"retried then created", v1.Event{Count: 1}, script{errs: repeat(down, 2)}, true, 3, Counts{Created: 1, Retries: 2}},
		{"retry limit", v1.Event{Count: 1}, script{errs: repeat(down, 10)}, false, 4, Counts{FailedRetries: 1, Retries: 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := Writer[*v1.Event]{
					MaxTries: 4,
					pauseFor: func(int) time.Duration { return 10 * time.Second },
					classify: func(err error, _ *v1.Event) (Class, bool) { return ClassOf(err), false },
					Clock:    clock.RealClock{}, // the bubble's
					Stopping: make(chan struct{}),
					Logger:   logr.Discard(),
				}
				var got Counts
				s := tc.script
				ev := tc.ev
				if written := w.Write(context.Background(), &got, &ev, s.attempt); written != tc.written {
					t.Errorf("Write = %v, want %v", written, tc.written)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("counts (-want +got):\n%s", diff)
				}
				if len(s.attempts) != tc.attempts {
					t.Fatalf("%d attempts, want %d", len(s.attempts), tc.attempts)
				}
				for i := 1; i < len(s.attempts); i++ {
					if d := s.attempts[i].Sub(s.attempts[i-1]); d != 10*time.Second {
						t.Errorf("pause %d = %v, want the injected 10s", i, d)
					}
				}
			})
		})
	}
}

// TestWriterStopsRetryingAtShutdown: a write pausing between attempts
// gives up at once when the shutdown begins or its context ends, and an
// event failing after that gets no pause at all.
func TestWriterStopsRetryingAtShutdown(t *testing.T) {
	for _, end := range []string{"shutdown", "context"} {
		t.Run(end, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				stopping := make(chan struct{})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				w := Writer[*v1.Event]{
					MaxTries: 12,
					pauseFor: func(int) time.Duration { return time.Hour },
					classify: func(err error, _ *v1.Event) (Class, bool) { return Retry, false },
					Clock:    clock.RealClock{},
					Stopping: stopping,
					Logger:   logr.Discard(),
				}
				s := &script{errs: repeat(errors.New("down"), 100)}
				var got Counts
				done := make(chan bool)
				go func() { done <- w.Write(ctx, &got, &v1.Event{Count: 1}, s.attempt) }()
				synctest.Wait() // one attempt made, pausing an hour
				start := time.Now()
				if end == "shutdown" {
					close(stopping)
				} else {
					cancel()
				}
				if <-done || time.Since(start) != 0 {
					t.Errorf("Write did not give up at once")
				}
				if want := (Counts{FailedShutdown: 1}); got != want || len(s.attempts) != 1 {
					t.Errorf("counts %+v after %d attempts, want %+v after 1", got, len(s.attempts), want)
				}
				// After the shutdown: one attempt, no pause.
				s = &script{errs: repeat(errors.New("down"), 100)}
				got = Counts{}
				if w.Write(ctx, &got, &v1.Event{Count: 1}, s.attempt) || len(s.attempts) != 1 || got.FailedShutdown != 1 {
					t.Errorf("after the end: %d attempts, counts %+v; want 1 attempt, FailedShutdown", len(s.attempts), got)
				}
			})
		})
	}
}

func TestWriteOnce(t *testing.T) {
	w := Writer[*v1.Event]{
		MaxTries: 12,
		pauseFor: func(int) time.Duration { return time.Hour },
		classify: func(err error, _ *v1.Event) (Class, bool) { return ClassOf(err), true },
		Clock:    clock.RealClock{},
		Logger:   logr.Discard(),
	}
	tests := []struct {
		err              error
		written, settled bool
	}{
		{nil, true, true},
		{errors.New("down"), false, false},
		{apierrors.NewAlreadyExists(schema.GroupResource{Resource: "events"}, "x"), false, true},
	}
	for _, tc := range tests {
		var c Counts
		s := &script{}
		if tc.err != nil {
			s.errs = []error{tc.err}
		}
		written, settled := w.WriteOnce(&c, &v1.Event{Count: 2}, s.attempt)
		if written != tc.written || settled != tc.settled || len(s.attempts) != 1 || c != (Counts{}) {
			t.Errorf("WriteOnce with %v = %v, %v after %d attempts, counts %+v; want %v, %v after 1, no counts",
				tc.err, written, settled, len(s.attempts), c, tc.written, tc.settled)
		}
	}
}

// TestWriterLogsForbiddenOncePerBurst: an identity without the RBAC rule
// is refused every event; each is counted, and one error line a burst
// says so, with the count since the last one.
func TestWriterLogsForbiddenOncePerBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.Lines
		w := Writer[*v1.Event]{
			MaxTries: 12,
			pauseFor: func(int) time.Duration { return time.Hour },
			classify: func(err error, _ *v1.Event) (Class, bool) { return ClassOf(err), false },
			Clock:    clock.RealClock{}, // the bubble's
			Stopping: make(chan struct{}),
			Logger:   log.Logger(),
		}
		forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "e", errors.New("no rule"))
		write := func(n int) Counts {
			var c Counts
			for range n {
				s := &script{errs: []error{forbidden}}
				w.Write(context.Background(), &c, &v1.Event{Count: 1}, s.attempt)
			}
			return c
		}
		errorLines := func() (out []string) {
			for _, line := range log.With("Server forbade writing event") {
				if strings.Contains(line, `"error"=`) {
					out = append(out, line)
				}
			}
			return out
		}
		if c := write(5); c != (Counts{FailedForbidden: 5}) {
			t.Errorf("counts of 5 forbidden writes = %+v, want FailedForbidden 5", c)
		}
		if got := errorLines(); len(got) != 1 || !strings.Contains(got[0], `"forbiddenSinceLastReport"=1`) {
			t.Errorf("error lines for 5 refusals: %q; want one, reporting the first", got)
		}
		time.Sleep(BurstInterval)
		write(1)
		if got := errorLines(); len(got) != 2 || !strings.Contains(got[1], `"forbiddenSinceLastReport"=5`) {
			t.Errorf("error lines after %v: %q; want a second one, reporting the 5 since the first", BurstInterval, got)
		}
	})
}
