package k8sadapter_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	testclocks "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/k8sadapter"
)

// heldSink is client-go's EventSinkImpl whose first call waits until
// release is closed (if not nil), and which counts its calls.
type heldSink struct {
	record.EventSink
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

func (s *heldSink) Create(e *v1.Event) (*v1.Event, error) {
	s.hold()
	s.creates.Add(1)
	return s.EventSink.Create(e)
}

func (s *heldSink) Patch(e *v1.Event, p []byte) (*v1.Event, error) {
	s.hold()
	s.patches.Add(1)
	return s.EventSink.Patch(e, p)
}

func newHeldSink(client *fake.Clientset, held bool) *heldSink {
	s := &heldSink{EventSink: &typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")}}
	if held {
		s.release, s.held = make(chan struct{}), make(chan struct{})
	}
	return s
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

// TestBurstOfRepeatsLosesNoCount is the burst of issue 17 on the core/v1
// path: 20 000 Eventf calls in a tight loop, over 1 000 objects
// (interleaved: every object once, twenty times over), into client-go's
// fake clientset behind its EventSinkImpl, then Shutdown. Every object's
// event is stored with the count of its calls (twenty: within the spam
// filter's burst of 25) and nothing is dropped, however the sink is
// scheduled: a repeat folds into the waiting event it repeats, so the
// sink's queue (1 000 long by default) holds at most one entry per
// object. With a handler started, every event is built (the handler is
// owed it); without, a repeat folds before the recorder builds it.
//
// With the sink held until the burst is recorded, every object but the
// first waits whole: its twenty events are correlated one by one, and
// written as a create and one patch of count 20 (client-go: a create and
// nineteen patches).
func TestBurstOfRepeatsLosesNoCount(t *testing.T) {
	const objects, repeats = 1_000, 20
	pods := make([]*v1.Pod, objects)
	for i := range pods {
		pods[i] = pod(fmt.Sprint("p", i))
	}
	for _, tc := range []struct{ held, handler bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		held := tc.held
		t.Run(fmt.Sprintf("sink held=%v/handler=%v", held, tc.handler), func(t *testing.T) {
			client := trackerClientset()
			sink := newHeldSink(client, held)
			e := newBroadcaster(t)
			e.StartRecordingToSink(sink)
			if tc.handler {
				e.StartEventWatcher(func(*v1.Event) {})
			}
			r := recorder(e)
			for i := range objects * repeats {
				r.Eventf(pods[i%objects], v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
				if held && i == 0 {
					<-sink.held // the sink holds p0's first event: the rest wait
				}
			}
			if held {
				close(sink.release)
			}
			join(t, e)

			list, err := client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != objects {
				t.Fatalf("%d events stored, want one per object (%d)", len(list.Items), objects)
			}
			for _, ev := range list.Items {
				if ev.Count != repeats {
					t.Fatalf("%s stored with count %d, want %d", ev.InvolvedObject.Name, ev.Count, repeats)
				}
			}
			st := e.Stats()
			if st.DroppedSinkQueue+st.SpamSkipped != 0 || sinkFates(st) != objects*repeats {
				t.Errorf("Stats() = %+v, want nothing dropped or skipped, every event in one fate", st)
			}
			if tc.handler && st.Handled+st.DroppedWatcherQueue != st.Queued {
				t.Errorf("Stats() = %+v: the handler's events are not all accounted for", st)
			}
			if held {
				want := k8sadapter.Stats{Recorded: objects * repeats, Queued: objects * repeats, Created: objects,
					Patched: objects * (repeats - 1), Deduplicated: objects * (repeats - 1), Folded: objects*(repeats-1) - 1}
				want.Handled, want.DroppedWatcherQueue = st.Handled, st.DroppedWatcherQueue
				if diff := cmp.Diff(want, st); diff != "" {
					t.Errorf("Stats() (-want +got):\n%s", diff)
				}
				if c, p := sink.creates.Load(), sink.patches.Load(); c != objects || p != objects {
					t.Errorf("sink calls: %d creates, %d patches; want %d of each", c, p, objects)
				}
			}
			t.Logf("sink calls: %d creates, %d patches for %d events (%d folded)", sink.creates.Load(), sink.patches.Load(), objects*repeats, st.Folded)
		})
	}
}

// foldScript records what makes folding delicate, the clock stepping a
// second before each event: a flood beyond the spam filter's burst (its
// last allowed event is not its last), two reasons alternating on one
// object (one spam bucket: nothing folds across them), runs of similar
// events that end up combined, objects whose events interleave (folded
// per object), events that differ only in annotations (not repeats), an
// object whose events get random names (never folded), and two types
// alternating on one object (two buckets, each folding across the
// other). The first event is held at the sink, so that the rest wait
// and fold.
func foldScript(r record.EventRecorder, clk *testclocks.FakeClock) {
	ev := func(obj runtime.Object, typ, reason, msg string) {
		clk.Step(time.Second)
		r.Event(obj, typ, reason, msg)
	}
	ev(pod("held"), v1.EventTypeNormal, "Held", "the sink waits")
	for range 40 {
		ev(pod("crash"), v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
	}
	for i := range 30 {
		ev(pod("alt"), v1.EventTypeNormal, []string{"Pulled", "Created"}[i%2], "container app")
	}
	for layer := range 12 {
		// Repeats of the first nine messages fold; the tenth to twelfth
		// are combined. (A repeat of a message after the group was
		// combined is combined or not as client-go's random pick of the
		// member it forgets decides.)
		for range 1 + max(0, 1-layer/9) {
			ev(pod("pull"), v1.EventTypeNormal, "Pulling", fmt.Sprintf("Pulling image layer %d of 12", layer+1))
		}
	}
	for range 5 {
		for i := range 50 {
			ev(pod(fmt.Sprint("web-", i)), v1.EventTypeNormal, "Scheduled", "Successfully assigned")
		}
	}
	for _, trace := range []string{"a", "a", "a", "b", "b", "b"} {
		clk.Step(time.Second)
		r.AnnotatedEventf(pod("annotated"), map[string]string{"trace": trace}, v1.EventTypeNormal, "Synced", "synced")
	}
	for range 5 {
		ev(&v1.ObjectReference{Kind: "Widget", Namespace: "baz", Name: "Not_A_DNS_Name", UID: "w"}, v1.EventTypeNormal, "Spun", "spun")
	}
	for i := range 20 {
		ev(pod("mixed"), []string{v1.EventTypeNormal, v1.EventTypeWarning}[i%2], "Probe", "probe result")
	}
	ev(pod("sentinel"), v1.EventTypeNormal, "Done", "done")
}

// storedEvent is what a stored event must have alike, whoever wrote it
// (a random name reads "(random)").
type storedEvent struct {
	Name, Namespace, Kind, Object, FieldPath string
	Type, Reason, Message                    string
	Count                                    int32
	First, Last                              time.Time
	Annotations                              map[string]string
	Source                                   v1.EventSource
}

func storedEvents(t *testing.T, client *fake.Clientset) []storedEvent {
	t.Helper()
	list, err := client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []storedEvent
	for _, e := range list.Items {
		name := e.Name
		if !strings.HasPrefix(name, e.InvolvedObject.Name+".") {
			name = "(random)" // a UUID: the object's name makes no valid event name
		}
		out = append(out, storedEvent{
			Name: name, Namespace: e.Namespace, Kind: e.InvolvedObject.Kind, Object: e.InvolvedObject.Name,
			FieldPath: e.InvolvedObject.FieldPath, Type: e.Type, Reason: e.Reason, Message: e.Message, Count: e.Count,
			First: e.FirstTimestamp.UTC(), Last: e.LastTimestamp.UTC(), Annotations: e.Annotations, Source: e.Source,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// TestFoldedSinkStoresWhatClientGoStores records foldScript through
// herald, its sink held so that the events wait and fold, and feeds the
// very events herald's recorder built to client-go's broadcaster, which
// correlates and writes them one at a time. Both correlators read one
// fixed clock, both sinks are client-go's EventSinkImpl on a fake
// clientset: the events stored must be the same, field for field,
// timestamps included: every spam token, count and combined event as
// client-go decided them, and each written count with the time of the
// last event allowed. Then the correlators' clock moves five minutes (a
// token each) and a last round of events shows that their state is still
// the same (a skipped repeat still counts). herald makes fewer writes.
//
// The fake clientset is trackerClientset: on NewClientset's tracker,
// client-go's 359 writes, slowed further by the polls that wait for
// them, took longer than the failsafe on a loaded machine.
//
// With a handler started, every event is built and offered to the sink's
// queue; without, a repeat of a waiting event folds before it is built.
// Both must store the same.
func TestFoldedSinkStoresWhatClientGoStores(t *testing.T) {
	ctx := klog.NewContext(context.Background(), logr.Discard())
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	source := v1.EventSource{Component: "kubelet", Host: "node-1"}
	refill := func(r record.EventRecorder, clk *testclocks.FakeClock) {
		for _, obj := range []string{"crash", "alt", "pull", "mixed"} {
			clk.Step(time.Second)
			r.Event(pod(obj), v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
		}
		clk.Step(time.Second)
		r.Event(pod("sentinel"), v1.EventTypeNormal, "Done", "done again")
	}
	flush := func(e *k8sadapter.EventBroadcaster) {
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		defer cancel()
		if err := e.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// The events, as herald's recorder builds them on a fake clock: a
	// handler keeps them.
	var built []*v1.Event // written by the handler, read after a Flush
	clk := testclocks.NewFakeClock(t0)
	capture := newBroadcaster(t, k8sadapter.WithClock(clk))
	capture.StartEventWatcher(func(e *v1.Event) { built = append(built, e.DeepCopy()) })
	cr := capture.NewRecorder(scheme.Scheme, source)
	foldScript(cr, clk)
	flush(capture)
	phase1 := len(built)
	refill(cr, clk)
	flush(capture)

	// client-go, fed those events. It has no flush: feed it a phase, then
	// wait for the phase's last event, written last.
	anchorClient := trackerClientset()
	anchorSink := newHeldSink(anchorClient, false)
	anchorCorr := testclocks.NewFakeClock(t0)
	anchor := record.NewBroadcaster(record.WithContext(ctx),
		record.WithCorrelatorOptions(record.CorrelatorOptions{Clock: anchorCorr}))
	anchor.StartRecordingToSink(anchorSink)
	queue := anchor.(interface {
		Action(watch.EventType, runtime.Object) error
	})
	feed := func(evs []*v1.Event, last string) {
		for _, e := range evs {
			if err := queue.Action(watch.Added, e); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(failsafe)
		for !containsMessage(storedEvents(t, anchorClient), last) {
			if time.Now().After(deadline) {
				t.Fatalf("client-go did not store %q", last)
			}
			time.Sleep(5 * time.Millisecond) // bounded poll of client-go, which offers no flush
		}
	}
	feed(built[:phase1], "done")
	want1 := storedEvents(t, anchorClient) // before the refill hides the flood's last allowed time
	anchorCorr.Step(5 * time.Minute)
	feed(built[phase1:], "done again")
	anchor.Shutdown()
	want := storedEvents(t, anchorClient)
	anchorWrites := anchorSink.creates.Load() + anchorSink.patches.Load()

	for _, handler := range []bool{true, false} {
		t.Run(fmt.Sprintf("handler=%v", handler), func(t *testing.T) {
			heraldClient := trackerClientset()
			heraldSink := newHeldSink(heraldClient, true)
			clk, heraldCorr := testclocks.NewFakeClock(t0), testclocks.NewFakeClock(t0)
			herald := newBroadcaster(t, k8sadapter.WithClock(clk),
				k8sadapter.WithCorrelatorOptions(record.CorrelatorOptions{Clock: heraldCorr}))
			if handler {
				herald.StartEventWatcher(func(*v1.Event) {})
			}
			herald.StartRecordingToSink(heraldSink)
			hr := herald.NewRecorder(scheme.Scheme, source)
			foldScript(hr, clk)
			close(heraldSink.release)
			flush(herald)
			if diff := cmp.Diff(want1, storedEvents(t, heraldClient)); diff != "" {
				t.Errorf("stored events before the refill differ (-client-go +herald):\n%s", diff)
			}
			heraldCorr.Step(5 * time.Minute)
			refill(hr, clk)
			join(t, herald)
			st := herald.Stats()
			if st.Recorded != uint64(len(built)) || st.Folded == 0 || st.SpamSkipped == 0 || st.Aggregated == 0 ||
				st.DroppedWatcherQueue != 0 || sinkFates(st) != st.Queued {
				t.Fatalf("Stats() = %+v: the script must fold, skip and combine, and nothing be dropped", st)
			}
			got := storedEvents(t, heraldClient)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("stored events differ (-client-go +herald):\n%s", diff)
			}
			hw := heraldSink.creates.Load() + heraldSink.patches.Load()
			if hw >= anchorWrites {
				t.Errorf("herald made %d writes, client-go %d; folding should save some", hw, anchorWrites)
			}
			t.Logf("%d events, %d stored; writes: herald %d, client-go %d; herald folded %d, skipped %d, combined %d",
				len(built), len(got), hw, anchorWrites, st.Folded, st.SpamSkipped, st.Aggregated)
		})
	}
}

func containsMessage(evs []storedEvent, msg string) bool {
	for _, e := range evs {
		if e.Message == msg {
			return true
		}
	}
	return false
}
