package events_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	clientevents "k8s.io/client-go/tools/events"

	"github.com/heraldgo/herald/k8sadapter/events"
)

// heldSink is client-go's EventSinkImpl whose first call waits until
// release is closed, and which counts its calls.
type heldSink struct {
	clientevents.EventSink
	release          chan struct{}
	held             chan struct{} // closed once the first call waits
	once             sync.Once
	creates, patches atomic.Int64
}

func (s *heldSink) hold() {
	if s.release != nil {
		s.once.Do(func() {
			close(s.held)
			<-s.release
		})
	}
}

func (s *heldSink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	s.hold()
	s.creates.Add(1)
	return s.EventSink.Create(ctx, e)
}

func (s *heldSink) Patch(ctx context.Context, e *eventsv1.Event, p []byte) (*eventsv1.Event, error) {
	s.hold()
	s.patches.Add(1)
	return s.EventSink.Patch(ctx, e, p)
}

// trackerClientset is client-go's fake Clientset on client-go's plain
// object tracker (what the deprecated NewSimpleClientset builds).
// NewClientset's field-managed tracker takes some 3 ms a write once it
// holds a thousand events (8 ms under -race), this one some 5 µs: the
// burst tests store a thousand events and write two thousand times.
func trackerClientset() *fake.Clientset {
	o := k8stesting.NewObjectTracker(scheme.Scheme, scheme.Codecs.UniversalDecoder())
	c := &fake.Clientset{}
	c.AddReactor("*", "*", k8stesting.ObjectReaction(o))
	return c
}

// TestBurstOfRepeatsLosesNoCount is the burst of issue 17: 20 000 Eventf
// calls in a tight loop, over 1 000 series (interleaved: every series
// once, twenty times over), into client-go's fake clientset, then
// Shutdown. Every stored series has the count of its calls and nothing
// is dropped, however the writer is scheduled: repeats fold into the
// event of their series waiting for the writer, so the queue holds at
// most one entry per series. A handler started with room for the burst
// gets every call, unfolded; without one, a repeat folds before the
// recorder builds it.
//
// With the writer held until the burst is recorded, every series but the
// first waits whole: each is written as client-go writes a series by its
// finish pass (a create and a patch of count 20), in one patch fewer.
func TestBurstOfRepeatsLosesNoCount(t *testing.T) {
	const series, repeats = 1_000, 20
	pods := make([]*v1.Pod, series)
	for i := range pods {
		pods[i] = pod(fmt.Sprint("p", i))
	}
	for _, tc := range []struct{ held, handler bool }{{false, true}, {true, true}, {false, false}, {true, false}} {
		held := tc.held
		t.Run(fmt.Sprintf("writer held=%v/handler=%v", held, tc.handler), func(t *testing.T) {
			client := trackerClientset()
			sink := &heldSink{EventSink: &clientevents.EventSinkImpl{Interface: client.EventsV1()}}
			if held {
				sink.release, sink.held = make(chan struct{}), make(chan struct{})
			}
			e := events.NewBroadcaster(sink, events.WithQueueLength(series*repeats))
			if err := e.StartRecordingToSinkWithContext(quiet); err != nil {
				t.Fatal(err)
			}
			var handled atomic.Int64
			if tc.handler {
				if _, err := e.StartEventWatcher(func(k8sruntime.Object) { handled.Add(1) }); err != nil {
					t.Fatal(err)
				}
			}
			owed := int64(0)
			if tc.handler {
				owed = series * repeats
			}
			r := e.NewRecorder(scheme.Scheme, "burst")
			for i := range series * repeats {
				r.Eventf(pods[i%series], nil, v1.EventTypeWarning, "BackOff", "Restarting", "back-off %d", i)
				if held && i == 0 {
					<-sink.held // the writer holds p0's first event: the rest wait
				}
			}
			if held {
				close(sink.release)
			}
			if err := e.ShutdownContext(context.Background()); err != nil {
				t.Fatal(err)
			}

			list, err := client.EventsV1().Events("").List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			counts := map[string]int32{}
			for _, ev := range list.Items {
				if ev.Series == nil {
					t.Fatalf("%s stored without a series", ev.Regarding.Name)
				}
				counts[ev.Regarding.Name] += ev.Series.Count
			}
			for i := range series {
				if name := fmt.Sprint("p", i); counts[name] != repeats {
					t.Fatalf("series %s stored with count %d (%d events stored), want %d", name, counts[name], len(list.Items), repeats)
				}
			}
			st := e.Stats()
			if st.DroppedSinkQueue+st.DroppedWatcherQueue != 0 || writerFates(st) != series*repeats {
				t.Errorf("Stats() = %+v, want nothing dropped and every event in one fate", st)
			}
			if got := handled.Load(); got != owed {
				t.Errorf("the handler got %d events, want every one of the %d calls", got, owed)
			}
			if held {
				// p0's first event was taken alone, the others waited: 1 + 19
				// for p0, 20 for every other series.
				want := events.Stats{Recorded: series * repeats, Queued: series * repeats, Created: series, Patched: series,
					SeriesObserved: series * (repeats - 2), Folded: series*(repeats-1) - 1, Handled: uint64(owed)}
				if diff := cmp.Diff(want, st); diff != "" {
					t.Errorf("Stats() (-want +got):\n%s", diff)
				}
				if c, p := sink.creates.Load(), sink.patches.Load(); c != series || p != series {
					t.Errorf("sink calls: %d creates, %d patches; want %d of each", c, p, series)
				}
			}
			t.Logf("sink calls: %d creates, %d patches for %d events (%d folded)", sink.creates.Load(), sink.patches.Load(), series*repeats, st.Folded)
		})
	}
}
