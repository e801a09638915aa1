package events_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clientevents "k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/k8sadapter/events"
)

var quiet = klog.NewContext(context.Background(), logr.Discard())

func pod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "baz", UID: types.UID("uid-" + name)}}
}

// call is one call the sink received.
type call struct {
	verb  string
	event *eventsv1.Event
	patch string
}

// sink is an events.EventSink that stores like an apiserver (patches are
// applied to the stored copy) unless a test scripts its answers.
type sink struct {
	mu       sync.Mutex
	calls    []call
	stored   map[string]*eventsv1.Event
	onCreate func(n int, e *eventsv1.Event) error
	creates  int
	// onPatch, if set, runs before every patch, without the lock: it may
	// block.
	onPatch func()
}

func newSink() *sink { return &sink{stored: map[string]*eventsv1.Event{}} }

func (s *sink) Create(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.creates++
	s.calls = append(s.calls, call{verb: "create", event: e.DeepCopy()})
	if s.onCreate != nil {
		if err := s.onCreate(s.creates, e); err != nil {
			return nil, err
		}
	}
	if _, ok := s.stored[e.Name]; ok {
		return nil, apierrors.NewAlreadyExists(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, e.Name)
	}
	s.stored[e.Name] = e.DeepCopy()
	return e.DeepCopy(), nil
}

func (s *sink) Update(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return nil, errors.New("update is never called")
}

func (s *sink) Patch(_ context.Context, e *eventsv1.Event, p []byte) (*eventsv1.Event, error) {
	s.mu.Lock()
	hook := s.onPatch
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call{verb: "patch", event: e.DeepCopy(), patch: string(p)})
	old, ok := s.stored[e.Name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, e.Name)
	}
	old.Series = e.Series.DeepCopy()
	return old.DeepCopy(), nil
}

// setOnPatch sets onPatch while the writer may be patching.
func (s *sink) setOnPatch(f func()) {
	s.mu.Lock()
	s.onPatch = f
	s.mu.Unlock()
}

func (s *sink) snapshot() ([]call, []*eventsv1.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var evs []*eventsv1.Event
	for _, e := range s.stored {
		evs = append(evs, e.DeepCopy())
	}
	return append([]call(nil), s.calls...), evs
}

func verbs(calls []call) string {
	var v []string
	for _, c := range calls {
		v = append(v, c.verb)
	}
	return strings.Join(v, " ")
}

// start returns a recording broadcaster, joined when the bubble's test ends.
func start(t *testing.T, s clientevents.EventSink, opts ...events.Option) (*events.EventBroadcaster, clientevents.EventRecorderLogger) {
	t.Helper()
	e := events.NewBroadcaster(s, opts...)
	if err := e.StartRecordingToSinkWithContext(quiet); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.ShutdownContext(context.Background()); err != nil {
			t.Errorf("ShutdownContext: %v", err)
		}
	})
	return e, e.NewRecorder(scheme.Scheme, "test-controller")
}

func TestCompileTimeDropIn(t *testing.T) {
	var b clientevents.EventBroadcaster = events.NewBroadcaster(newSink())
	var r clientevents.EventRecorder = b.NewRecorder(scheme.Scheme, "c")
	_ = r
	b.Shutdown()
}

// TestSeries re-expresses client-go's series scenarios: one event, then
// an isomorphic one (another note, same everything else), then more.
func TestSeries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		e, r := start(t, s)
		r.Eventf(pod("foo"), nil, v1.EventTypeNormal, "Started", "Starting", "note %d", 1)
		synctest.Wait()
		calls, stored := s.snapshot()
		if verbs(calls) != "create" || len(stored) != 1 || stored[0].Series != nil {
			t.Fatalf("one event: calls %q, stored %d with series %v; want one create without series", verbs(calls), len(stored), stored[0].Series)
		}
		r.Eventf(pod("foo"), nil, v1.EventTypeNormal, "Started", "Starting", "note %d", 2) // isomorphic: the note differs
		synctest.Wait()
		calls, stored = s.snapshot()
		if verbs(calls) != "create patch" || len(stored) != 1 || stored[0].Series == nil || stored[0].Series.Count != 2 {
			t.Fatalf("isomorphic event: calls %q, stored %+v; want a patch to a series of 2", verbs(calls), stored)
		}
		if !strings.HasPrefix(calls[1].patch, `{"series":{"count":2,"lastObservedTime":"`) {
			t.Errorf("series patch %s", calls[1].patch)
		}
		for range 5 {
			r.Eventf(pod("foo"), nil, v1.EventTypeNormal, "Started", "Starting", "again")
		}
		time.Sleep(time.Millisecond) // event names embed the time: let it move, as real time does
		r.Eventf(pod("foo"), nil, v1.EventTypeNormal, "Started", "Pulling", "another action: another series")
		synctest.Wait()
		calls, _ = s.snapshot()
		if verbs(calls) != "create patch create" {
			t.Errorf("calls %q: later occurrences must only count, a new action must create", verbs(calls))
		}
		if st := e.Stats(); st.Created != 2 || st.Patched != 1 || st.SeriesObserved != 5 {
			t.Errorf("Stats() = %+v", st)
		}
	})
}

// TestSecondOccurrenceOfAnUnstoredEvent: when the first create failed for
// good, the second occurrence's patch finds nothing and the event is
// created with its series (client-go's "isomorphic event before the
// original").
func TestSecondOccurrenceOfAnUnstoredEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		s.onCreate = func(n int, _ *eventsv1.Event) error {
			if n == 1 {
				return &rest.RequestConstructionError{Err: errors.New("bad")}
			}
			return nil
		}
		e, r := start(t, s)
		r.Eventf(pod("foo"), nil, v1.EventTypeNormal, "Started", "Starting", "one")
		r.Eventf(pod("foo"), nil, v1.EventTypeNormal, "Started", "Starting", "two")
		synctest.Wait()
		calls, stored := s.snapshot()
		if verbs(calls) != "create patch create" || len(stored) != 1 || stored[0].Series == nil || stored[0].Series.Count != 2 {
			t.Fatalf("calls %q, stored %+v; want the event created with a series of 2", verbs(calls), stored)
		}
		if st := e.Stats(); st.FailedConstruction != 1 || st.Created != 1 {
			t.Errorf("Stats() = %+v", st)
		}
	})
}

// TestFinishSeries: a series unobserved for 6 minutes gets its final count
// written, with its last observed time kept, and is forgotten; a single
// event is forgotten without a call.
func TestFinishSeries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		e, r := start(t, s)
		for range 4 {
			r.Eventf(pod("series"), nil, v1.EventTypeNormal, "Started", "Starting", "x")
		}
		r.Eventf(pod("single"), nil, v1.EventTypeNormal, "Started", "Starting", "x")
		synctest.Wait()
		lastObserved := time.Now()
		time.Sleep(6*time.Minute + time.Second) // the first finish pass: nothing is 6 min old yet
		synctest.Wait()
		if calls, _ := s.snapshot(); verbs(calls) != "create patch create" {
			t.Fatalf("after 6 min: calls %q", verbs(calls))
		}
		time.Sleep(6 * time.Minute) // the second pass finishes both
		synctest.Wait()
		calls, stored := s.snapshot()
		if verbs(calls) != "create patch create patch" {
			t.Fatalf("after 12 min: calls %q, want one more patch", verbs(calls))
		}
		final := calls[3].event.Series
		if final.Count != 4 || !final.LastObservedTime.Time.Equal(lastObserved) {
			t.Errorf("final series %+v, want count 4 observed at %v", final, lastObserved)
		}
		_ = stored
		// Both were forgotten: the same events start afresh.
		r.Eventf(pod("series"), nil, v1.EventTypeNormal, "Started", "Starting", "x")
		r.Eventf(pod("single"), nil, v1.EventTypeNormal, "Started", "Starting", "x")
		synctest.Wait()
		if calls, _ := s.snapshot(); verbs(calls) != "create patch create patch create create" {
			t.Errorf("after finishing: calls %q, want two new creates", verbs(calls))
		}
		if st := e.Stats(); st.SeriesWrites != 1 {
			t.Errorf("SeriesWrites = %d, want 1", st.SeriesWrites)
		}
	})
}

// TestRefreshSeries: a series observed every few minutes is written again
// every 30 minutes, with its current count, and stays open.
func TestRefreshSeries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		e, r := start(t, s)
		for range 6 { // at 0, 5, ..., 25 min: never 6 min unobserved
			r.Eventf(pod("busy"), nil, v1.EventTypeWarning, "BackOff", "Restarting", "x")
			synctest.Wait()
			time.Sleep(5 * time.Minute)
		}
		time.Sleep(time.Second) // past the refresh at 30 min
		synctest.Wait()
		calls, _ := s.snapshot()
		if verbs(calls) != "create patch patch" || calls[2].event.Series.Count != 6 {
			t.Fatalf("calls %q (last count %v); want the refresh at 30 min to write count 6", verbs(calls), calls[len(calls)-1].event.Series)
		}
		if st := e.Stats(); st.SeriesWrites != 1 || st.SeriesObserved != 4 {
			t.Errorf("Stats() = %+v", st)
		}
	})
}

// TestShutdownFlushesSeries: Shutdown writes every open series' final
// count; nothing counted is lost.
func TestShutdownFlushesSeries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		e := events.NewBroadcaster(s)
		if err := e.StartRecordingToSinkWithContext(quiet); err != nil {
			t.Fatal(err)
		}
		r := e.NewRecorder(scheme.Scheme, "c")
		for i := range 30 {
			r.Eventf(pod(fmt.Sprint("p", i%3)), nil, v1.EventTypeNormal, "Started", "Starting", "x")
		}
		e.Shutdown()
		_, stored := s.snapshot()
		if len(stored) != 3 {
			t.Fatalf("%d events stored, want 3", len(stored))
		}
		for _, ev := range stored {
			if ev.Series == nil || ev.Series.Count != 10 {
				t.Errorf("%s stored with series %+v, want count 10", ev.Regarding.Name, ev.Series)
			}
		}
		// However many repeats were folded while their series waited for
		// the writer (Folded), each event is in one fate.
		if st := e.Stats(); st.Created != 3 || st.Patched != 3 || st.SeriesObserved != 24 || writerFates(st) != st.Queued {
			t.Errorf("Stats() = %+v, want 3 created, 3 patched, 24 counted in their series", st)
		}
	})
}

// TestBoundedCache: beyond WithCacheSize the least recently seen event is
// forgotten; an open series gets its final count written first.
func TestBoundedCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		e, r := start(t, s, events.WithCacheSize(2))
		for range 3 {
			r.Eventf(pod("a"), nil, v1.EventTypeNormal, "Started", "Starting", "x") // a series of 3
			synctest.Wait()                                                         // one at a time: none folds
		}
		r.Eventf(pod("b"), nil, v1.EventTypeNormal, "Started", "Starting", "x")
		synctest.Wait()
		r.Eventf(pod("c"), nil, v1.EventTypeNormal, "Started", "Starting", "x") // evicts a
		synctest.Wait()
		calls, _ := s.snapshot()
		if verbs(calls) != "create patch create patch create" || calls[3].event.Series.Count != 3 {
			t.Fatalf("calls %q; want a's final count (3) written when it was evicted", verbs(calls))
		}
		if st := e.Stats(); st.Evicted != 1 {
			t.Errorf("Evicted = %d, want 1", st.Evicted)
		}
	})
}

func TestRetriesAndErrorClasses(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		attempts int
	}{
		{"transport error is retried", errors.New("connection refused"), 12},
		{"status error is final", apierrors.NewInternalError(errors.New("etcd")), 1},
		{"request construction error is final", &rest.RequestConstructionError{Err: errors.New("bad")}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newSink()
				var at []time.Time
				s.onCreate = func(int, *eventsv1.Event) error { at = append(at, time.Now()); return tc.err }
				_, r := start(t, s)
				r.Eventf(pod("foo"), nil, v1.EventTypeNormal, "Started", "Starting", "x")
				time.Sleep(time.Hour)
				synctest.Wait()
				if len(at) != tc.attempts {
					t.Fatalf("attempts = %d, want %d", len(at), tc.attempts)
				}
				for i := 1; i < len(at); i++ {
					if d := at[i].Sub(at[i-1]); d < 10*time.Second || d > 12500*time.Millisecond {
						t.Errorf("pause %d = %v, want within [10s, 12.5s]", i, d)
					}
				}
			})
		})
	}
}

func TestRecorderBuildsEventsAsClientGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got []*eventsv1.Event
		e := events.NewBroadcaster(newSink())
		stop, err := e.StartEventWatcher(func(o runtime.Object) {
			mu.Lock()
			got = append(got, o.(*eventsv1.Event))
			mu.Unlock()
		})
		if err != nil {
			t.Fatal(err)
		}
		r := e.NewRecorder(scheme.Scheme, "k8s.io/kube-foo")
		now := time.Now()
		r.Eventf(pod("foo"), pod("bar"), v1.EventTypeWarning, "Failed", "Pulling", "image %s", "x")
		r.Eventf(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, nil, v1.EventTypeNormal, "Ready", "Checking", "ok")
		r.Eventf(&v1.ObjectReference{Kind: "IPAddress", Name: "2001:db8::123"}, nil, v1.EventTypeNormal, "Allocated", "Allocating", "ok")
		r.Eventf(pod("foo"), nil, "Bad", "R", "A", "refused")
		r.Eventf(nil, nil, v1.EventTypeNormal, "R", "A", "refused")
		synctest.Wait()
		stop()
		e.Shutdown()
		if len(got) != 3 {
			t.Fatalf("got %d events, want 3", len(got))
		}
		first := got[0]
		if want := fmt.Sprintf("foo.%x", now.UnixNano()); first.Name != want || first.Namespace != "baz" ||
			first.Related == nil || first.Related.Name != "bar" || first.Note != "image x" || first.Action != "Pulling" ||
			!first.EventTime.Time.Equal(now) || !strings.HasPrefix(first.ReportingInstance, "k8s.io/kube-foo-") {
			t.Errorf("event %+v", first)
		}
		if got[1].Namespace != metav1.NamespaceDefault {
			t.Errorf("cluster-scoped object's event in namespace %q, want default", got[1].Namespace)
		}
		if len(got[2].Name) != 36 {
			t.Errorf("invalid object name gave event name %q, want a UUID", got[2].Name)
		}
		if st := e.Stats(); st.InvalidType != 1 || st.InvalidObject != 1 || st.Queued != 3 {
			t.Errorf("Stats() = %+v", st)
		}
	})
}

func TestAfterShutdown(t *testing.T) {
	e := events.NewBroadcaster(newSink())
	e.Shutdown()
	if _, err := e.StartEventWatcher(func(runtime.Object) {}); err == nil {
		t.Error("StartEventWatcher after Shutdown: no error")
	}
	if err := e.StartRecordingToSinkWithContext(quiet); err == nil {
		t.Error("StartRecordingToSinkWithContext after Shutdown: no error")
	}
	e.NewRecorder(scheme.Scheme, "c").Eventf(pod("a"), nil, v1.EventTypeNormal, "R", "A", "late")
	if st := e.Stats(); st.DroppedClosed != 1 {
		t.Errorf("DroppedClosed = %d, want 1", st.DroppedClosed)
	}
	e.StartStructuredLogging(0)() // a no-op stop, no panic
}

func TestRecordingTwiceIsAnError(t *testing.T) {
	e := events.NewBroadcaster(newSink())
	defer e.Shutdown()
	if err := e.StartRecordingToSinkWithContext(quiet); err != nil {
		t.Fatal(err)
	}
	if err := e.StartRecordingToSinkWithContext(quiet); !errors.Is(err, events.ErrRecording) {
		t.Errorf("second start = %v, want ErrRecording", err)
	}
}

func TestContextEndStopsRecording(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		e := events.NewBroadcaster(s)
		ctx, cancel := context.WithCancel(quiet)
		if err := e.StartRecordingToSinkWithContext(ctx); err != nil {
			t.Fatal(err)
		}
		r := e.NewRecorder(scheme.Scheme, "c")
		r.Eventf(pod("a"), nil, v1.EventTypeNormal, "R", "A", "x")
		synctest.Wait()
		cancel()
		synctest.Wait()
		r.Eventf(pod("b"), nil, v1.EventTypeNormal, "R", "A", "x") // queued, never written
		e.Shutdown()
		if calls, _ := s.snapshot(); len(calls) != 1 {
			t.Errorf("calls %q, want only the event before the cancel", verbs(calls))
		}
	})
}

// TestSeriesAlreadyExistsIsRetried: the create that follows a series patch
// on a vanished event can meet the first occurrence's create, still in
// flight; client-go retries that AlreadyExists, and so does herald.
func TestSeriesAlreadyExistsIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		s.onCreate = func(n int, _ *eventsv1.Event) error {
			switch n {
			case 1: // the first occurrence's create is lost
				return &rest.RequestConstructionError{Err: errors.New("lost")}
			case 2: // the series' create races it
				return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "events"}, "x")
			}
			return nil
		}
		e, r := start(t, s)
		r.Eventf(pod("foo"), nil, v1.EventTypeNormal, "Started", "Starting", "x")
		r.Eventf(pod("foo"), nil, v1.EventTypeNormal, "Started", "Starting", "x")
		time.Sleep(time.Minute)
		synctest.Wait()
		calls, stored := s.snapshot()
		if verbs(calls) != "create patch create patch create" || len(stored) != 1 || stored[0].Series.Count != 2 {
			t.Errorf("calls %q stored %+v; want the series created on the second attempt", verbs(calls), stored)
		}
		if st := e.Stats(); st.Retries != 1 || st.Created != 1 {
			t.Errorf("Stats() = %+v", st)
		}
	})
}

// TestAnnotatedEventf: client-go v0.37's AnnotatedEventRecorder. The
// annotations are on the stored event, copied from the caller's map, and
// not part of the series key.
func TestAnnotatedEventf(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		e, r := start(t, s)
		ann := map[string]string{"example.com/trace": "abc"}
		r.(interface {
			AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...interface{})
		}).AnnotatedEventf(pod("foo"), nil, ann, v1.EventTypeNormal, "Pulled", "Pulling", "image %s", "x")
		ann["example.com/trace"] = "changed"
		r.Eventf(pod("foo"), nil, v1.EventTypeNormal, "Pulled", "Pulling", "image %s", "x")
		if err := e.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		calls, stored := s.snapshot()
		if got := verbs(calls); got != "create patch" {
			t.Errorf("sink calls %q, want create patch: annotations do not split a series", got)
		}
		if len(stored) != 1 || stored[0].Annotations["example.com/trace"] != "abc" {
			t.Errorf("stored %v, want one event annotated example.com/trace=abc", stored)
		}
	})
}
