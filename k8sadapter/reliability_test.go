package k8sadapter_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/heraldgo/herald/k8sadapter"
)

// faultySink fails in every way a sink can, at random with a fixed seed:
// latency, transport errors, each class of StatusError, 404 on patch,
// neither event nor error, panics, and one call that hangs until released.
type faultySink struct {
	mu      sync.Mutex
	rng     *rand.Rand
	calls   int
	hangAt  int
	release chan struct{}
	faults  map[string]int
}

var terminatingErr = &apierrors.StatusError{ErrStatus: metav1.Status{
	Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
	Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: v1.NamespaceTerminatingCause}}},
}}

func (s *faultySink) answer(e *v1.Event, patch bool) (*v1.Event, error) {
	s.mu.Lock()
	s.calls++
	n, r, lat := s.calls, s.rng.IntN(100), time.Duration(s.rng.IntN(3))*time.Millisecond
	fault := ""
	switch {
	case s.hangAt > 0 && n == s.hangAt:
		fault = "hang"
	case r < 60:
	case r < 68:
		fault = "transport"
	case r < 71:
		fault = "already exists"
	case r < 73:
		fault = "namespace terminating"
	case r < 76:
		fault = "server error"
	case r < 78:
		fault = "throttled"
	case r < 86 && patch:
		fault = "gone"
	case r < 89:
		fault = "nothing"
	case r < 91:
		fault = "panic"
	}
	s.faults[fault]++
	s.mu.Unlock()
	time.Sleep(lat)
	switch fault {
	case "hang":
		<-s.release
	case "transport":
		return nil, errors.New("connection reset by peer")
	case "already exists":
		return nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "events"}, e.Name)
	case "namespace terminating":
		return nil, terminatingErr
	case "server error":
		return nil, apierrors.NewInternalError(errors.New("etcd unavailable"))
	case "throttled":
		return nil, apierrors.NewTooManyRequests("slow down", 1)
	case "gone":
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "events"}, e.Name)
	case "nothing":
		return nil, nil
	case "panic":
		panic("sink bug")
	}
	out := e.DeepCopy()
	out.ResourceVersion = fmt.Sprint(n)
	return out, nil
}

func (s *faultySink) Create(e *v1.Event) (*v1.Event, error)          { return s.answer(e, false) }
func (s *faultySink) Update(e *v1.Event) (*v1.Event, error)          { return s.answer(e, false) }
func (s *faultySink) Patch(e *v1.Event, _ []byte) (*v1.Event, error) { return s.answer(e, true) }

// accounted checks the invariant of Stats for one sink: every event it
// was owed (queued while it was started: all of them here) ends in exactly
// one of its fates.
func accounted(t *testing.T, name string, s k8sadapter.Stats, queued uint64) {
	t.Helper()
	if s.Queued != queued || sinkFates(s) != queued {
		t.Errorf("%s: owed %d events, fates add up to %d, want the %d queued: %+v", name, s.Queued, sinkFates(s), queued, s)
	}
}

// TestFaultySinkAccounting pushes 100 000 events (10 000 with -short)
// through a broadcaster with a faulty sink and a healthy one: the healthy
// sink is not held up, nothing is lost without a count, every goroutine
// ends, and the heap returns to where it started. The workload scales
// with n, so that every fault happens at either size: 50 events an
// object on average (the spam filter and aggregation see repeats), and a
// sink call that hangs at 3 % of the events until a quarter are recorded
// (its queue overflows).
func TestFaultySinkAccounting(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	objects, hangAt := n/50, n*3/100
	synctest.Test(t, func(t *testing.T) {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)

		faulty := &faultySink{rng: rand.New(rand.NewPCG(42, 7)), hangAt: hangAt, release: make(chan struct{}), faults: map[string]int{}}
		healthy := &scriptSink{}
		e := k8sadapter.NewBroadcaster(quiet, k8sadapter.WithSleepDuration(50*time.Millisecond), k8sadapter.WithMaxTries(3))
		fw := e.StartRecordingToSink(faulty).(*k8sadapter.Handle)
		hw := e.StartRecordingToSink(healthy).(*k8sadapter.Handle)
		r := recorder(e)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range n {
			obj := pod(fmt.Sprint("p", rng.IntN(objects)))
			r.Eventf(obj, v1.EventTypeNormal, fmt.Sprint("Reason", rng.IntN(3)), "message %d", rng.IntN(15))
			if i == n/4 {
				close(faulty.release) // the hung call returns; the sink catches up
			}
			if i%200 == 199 {
				time.Sleep(time.Second) // fake time: the sinks work through their queues
				synctest.Wait()
			}
		}
		e.Shutdown()

		s, fs, hs := e.Stats(), fw.Stats(), hw.Stats()
		if s.Recorded != uint64(n) || s.Queued+s.DroppedClosed+s.InvalidObject+s.InvalidType != s.Recorded {
			t.Errorf("recorder side does not add up: %+v", s)
		}
		accounted(t, "faulty sink", fs, s.Queued)
		accounted(t, "healthy sink", hs, s.Queued)
		if hs.DroppedSinkQueue != 0 || hs.Created+hs.Patched+hs.SpamSkipped != s.Queued {
			t.Errorf("the healthy sink was held up by the faulty one: %+v", hs)
		}
		if fs.FailedPanic == 0 || fs.FailedRejected == 0 || fs.NilResponses == 0 || fs.Retries == 0 || fs.DroppedSinkQueue == 0 ||
			fs.Aggregated == 0 || fs.SpamSkipped == 0 || fs.FailedRetries == 0 {
			t.Errorf("the faults did not all happen: %+v", fs)
		}

		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		t.Logf("%d events: faults %v; faulty sink %+v; heap %d KiB before, %d KiB after (%+d KiB, caches included)",
			n, faulty.faults, fs, before.HeapAlloc>>10, after.HeapAlloc>>10, growth>>10)
		if growth > 64<<20 {
			t.Errorf("heap grew by %d MiB", growth>>20)
		}
	})
}
