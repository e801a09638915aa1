package k8sadapter_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	ref "k8s.io/client-go/tools/reference"
	"k8s.io/klog/v2"
	testclocks "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/k8sadapter"
)

// capture returns a handler that keeps every event and a function that
// returns them.
func capture() (func(*v1.Event), func() []*v1.Event) {
	var mu sync.Mutex
	var got []*v1.Event
	return func(e *v1.Event) {
			mu.Lock()
			got = append(got, e)
			mu.Unlock()
		}, func() []*v1.Event {
			mu.Lock()
			defer mu.Unlock()
			return append([]*v1.Event(nil), got...)
		}
}

// TestEventfBuildsEventsAsClientGo re-expresses client-go's TestEventf: the
// fields of a recorded event, its name and its log line. The clock stands
// still: the second event, about the same pod, is stamped a nanosecond
// later, so that its name differs from the first's (client-go's fake-clock
// test gives both one name, which a server refuses the second time).
func TestEventfBuildsEventsAsClientGo(t *testing.T) {
	clk := testclocks.NewFakeClock(time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC))
	testPod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "foo", Namespace: "baz", UID: "bar"}}
	testRef, err := ref.GetPartialReference(scheme.Scheme, testPod, "spec.containers[2]")
	if err != nil {
		t.Fatal(err)
	}
	e := newBroadcaster(t, k8sadapter.WithClock(clk))
	handle, events := capture()
	e.StartEventWatcher(handle)
	var logs []string
	var mu sync.Mutex
	e.StartLogging(func(format string, args ...interface{}) {
		mu.Lock()
		logs = append(logs, fmt.Sprintf(format, args...))
		mu.Unlock()
	})
	r := e.NewRecorder(scheme.Scheme, v1.EventSource{Component: "eventTest", Host: "node-1"})
	r.Eventf(testRef, v1.EventTypeNormal, "Started", "some verbose message: %v", 1)
	r.AnnotatedEventf(testPod, map[string]string{"k": "v"}, v1.EventTypeWarning, "Killed", "some other verbose message: %v", 1)
	join(t, e)

	ts, ts2 := metav1.NewTime(clk.Now()), metav1.NewTime(clk.Now().Add(time.Nanosecond))
	name := "foo." + strconv.FormatInt(clk.Now().UnixNano(), 16)
	name2 := "foo." + strconv.FormatInt(clk.Now().UnixNano()+1, 16)
	want := []*v1.Event{{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "baz"},
		InvolvedObject: v1.ObjectReference{
			Kind: "Pod", Name: "foo", Namespace: "baz", UID: "bar", APIVersion: "v1", FieldPath: "spec.containers[2]",
		},
		Reason: "Started", Message: "some verbose message: 1",
		Source: v1.EventSource{Component: "eventTest", Host: "node-1"}, ReportingController: "eventTest", ReportingInstance: "node-1",
		Count: 1, Type: v1.EventTypeNormal, FirstTimestamp: ts, LastTimestamp: ts,
	}, {
		ObjectMeta: metav1.ObjectMeta{Name: name2, Namespace: "baz", Annotations: map[string]string{"k": "v"}},
		InvolvedObject: v1.ObjectReference{
			Kind: "Pod", Name: "foo", Namespace: "baz", UID: "bar", APIVersion: "v1",
		},
		Reason: "Killed", Message: "some other verbose message: 1",
		Source: v1.EventSource{Component: "eventTest", Host: "node-1"}, ReportingController: "eventTest", ReportingInstance: "node-1",
		Count: 1, Type: v1.EventTypeWarning, FirstTimestamp: ts2, LastTimestamp: ts2,
	}}
	got := events()
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d", len(got), len(want))
	}
	for i := range want {
		if !equalEvents(got[i], want[i]) {
			t.Errorf("event %d =\n%#v\nwant\n%#v", i, got[i], want[i])
		}
	}
	wantLogs := []string{
		`Event(v1.ObjectReference{Kind:"Pod", Namespace:"baz", Name:"foo", UID:"bar", APIVersion:"v1", ResourceVersion:"", FieldPath:"spec.containers[2]"}): type: 'Normal' reason: 'Started' some verbose message: 1`,
		`Event(v1.ObjectReference{Kind:"Pod", Namespace:"baz", Name:"foo", UID:"bar", APIVersion:"v1", ResourceVersion:"", FieldPath:""}): type: 'Warning' reason: 'Killed' some other verbose message: 1`,
	}
	if strings.Join(logs, "\n") != strings.Join(wantLogs, "\n") {
		t.Errorf("StartLogging wrote\n%s\nwant\n%s", strings.Join(logs, "\n"), strings.Join(wantLogs, "\n"))
	}
}

func equalEvents(a, b *v1.Event) bool {
	return fmt.Sprintf("%#v", a) == fmt.Sprintf("%#v", b)
}

func TestStartStructuredLogging(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		lines = append(lines, args)
		mu.Unlock()
	}, funcr.Options{Verbosity: 4})
	e := k8sadapter.NewBroadcaster(k8sadapter.WithContext(klog.NewContext(context.Background(), logger)))
	e.StartStructuredLogging(3)
	recorder(e).Event(pod("foo"), v1.EventTypeNormal, "Started", "hello")
	join(t, e)
	want := `"msg"="Event occurred" "object"={"name"="foo" "namespace"="baz"} "fieldPath"="" "kind"="Pod" "apiVersion"="v1" "type"="Normal" "reason"="Started" "message"="hello"`
	if len(lines) != 1 || !strings.Contains(lines[0], want) {
		t.Errorf("structured log = %q, want a line containing %q", lines, want)
	}
}

func TestClusterScopedObjectGoesToDefaultNamespace(t *testing.T) {
	e := newBroadcaster(t)
	handle, events := capture()
	e.StartEventWatcher(handle)
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "u"}}
	recorder(e).Event(node, v1.EventTypeNormal, "Ready", "ok")
	join(t, e)
	got := events()
	if len(got) != 1 || got[0].Namespace != metav1.NamespaceDefault || got[0].InvolvedObject.Namespace != "" {
		t.Fatalf("event namespace %q, involved object namespace %q; want %q and none", got[0].Namespace, got[0].InvolvedObject.Namespace, metav1.NamespaceDefault)
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestInvalidObjectNameGetsUUIDEventName(t *testing.T) {
	e := newBroadcaster(t)
	handle, events := capture()
	e.StartEventWatcher(handle)
	for _, name := range []string{"Bad_Name", "2001:db8::123", strings.Repeat("a", 250)} {
		recorder(e).Event(&v1.ObjectReference{Kind: "IPAddress", Name: name}, v1.EventTypeNormal, "Allocated", "ok")
	}
	join(t, e)
	for _, ev := range events() {
		if !uuidRE.MatchString(ev.Name) {
			t.Errorf("event about %q named %q, want a UUID", ev.InvolvedObject.Name, ev.Name)
		}
	}
}

// TestRefusedInput: what a recorder refuses is logged and counted, never a
// panic, and nothing reaches the watchers.
func TestRefusedInput(t *testing.T) {
	e := newBroadcaster(t)
	handle, events := capture()
	e.StartEventWatcher(handle)
	r := recorder(e)
	var nilPod *v1.Pod
	r.Event(nil, v1.EventTypeNormal, "Nil", "no object")
	r.Event(nilPod, v1.EventTypeNormal, "TypedNil", "typed nil object")
	r.Event(&unregistered{}, v1.EventTypeNormal, "Unknown", "type unknown to the scheme")
	r.Event(pod("foo"), "Critical", "BadType", "type other than Normal or Warning")
	e.NewRecorder(runtime.NewScheme(), v1.EventSource{}).Event(pod("foo"), v1.EventTypeNormal, "EmptyScheme", "x")
	join(t, e)
	r.Event(pod("foo"), v1.EventTypeNormal, "Late", "after shutdown")
	if got := events(); len(got) != 0 {
		t.Errorf("watchers got %d events, want none", len(got))
	}
	s := e.Stats()
	if s.Recorded != 6 || s.InvalidObject != 4 || s.InvalidType != 1 || s.DroppedClosed != 1 || s.Queued != 0 {
		t.Errorf("Stats() = %+v, want 6 recorded: 4 invalid objects, 1 invalid type, 1 after shutdown", s)
	}
}

type unregistered struct{ metav1.TypeMeta }

func (u *unregistered) DeepCopyObject() runtime.Object { c := *u; return &c }

func TestPastEventfHonoursTheTimestamp(t *testing.T) {
	e := newBroadcaster(t)
	handle, events := capture()
	e.StartEventWatcher(handle)
	past := metav1.NewTime(time.Date(2020, 5, 6, 7, 8, 9, 0, time.UTC))
	recorder(e).(*k8sadapter.Recorder).PastEventf(pod("foo"), past, v1.EventTypeNormal, "Restored", "from %s", "backup")
	join(t, e)
	got := events()
	if len(got) != 1 || !got[0].FirstTimestamp.Equal(&past) || !got[0].LastTimestamp.Equal(&past) || got[0].Message != "from backup" {
		t.Fatalf("got %+v, want first and last timestamp %v", got, past)
	}
	if want := "foo." + strconv.FormatInt(past.UnixNano(), 16); got[0].Name != want {
		t.Errorf("name %q, want %q", got[0].Name, want)
	}
}

// TestLotsOfEvents is client-go's: 1000 concurrent Eventf calls, a sink that
// fails each event four times, and a logger; nothing is dropped.
func TestLotsOfEvents(t *testing.T) {
	const n = 1000
	var mu sync.Mutex
	counts := make(map[int]int)
	sink := &scriptSink{onCreate: func(_ int, ev *v1.Event) (*v1.Event, error) {
		i, err := strconv.Atoi(ev.Message)
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		defer mu.Unlock()
		counts[i]++
		if counts[i] < 5 {
			return nil, fmt.Errorf("fake error")
		}
		return ev, nil
	}}
	e := newBroadcaster(t, k8sadapter.WithSleepDuration(0))
	e.StartRecordingToSink(sink)
	var logged sync.WaitGroup
	logged.Add(n)
	e.StartLogging(func(string, ...interface{}) { logged.Done() })
	r := recorder(e)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			obj := &v1.ObjectReference{Kind: "Pod", Name: fmt.Sprintf("foo-%v", i), Namespace: "baz", UID: "bar", APIVersion: "version"}
			r.Eventf(obj, v1.EventTypeNormal, "Reason-"+strconv.Itoa(i), "%s", strconv.Itoa(i))
		})
	}
	wg.Wait()
	logged.Wait()
	deadline := time.Now().Add(failsafe)
	for e.Stats().Created < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // bounded poll; the failsafe ends it
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range n {
		if counts[i] != 5 {
			t.Fatalf("event %d attempted %d times, want 5", i, counts[i])
		}
	}
}

// TestEachSinkHasItsOwnCorrelator is client-go's TestMultiSinkCache: a
// second sink, started after the first stopped, sees the same pattern of
// creates and patches from scratch.
func TestEachSinkHasItsOwnCorrelator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBroadcaster(t)
		r := recorder(e)
		script := func() {
			r.Event(pod("foo"), v1.EventTypeNormal, "Started", "one")
			r.Event(pod("foo"), v1.EventTypeNormal, "Started", "one")
			r.Event(pod("foo"), v1.EventTypeNormal, "Killed", "two")
			r.Event(pod("foo"), v1.EventTypeNormal, "Started", "one")
			synctest.Wait()
		}
		first := &scriptSink{}
		w := e.StartRecordingToSink(first)
		script()
		w.Stop()
		second := &scriptSink{}
		e.StartRecordingToSink(second)
		script()
		want := "create patch create patch"
		for i, s := range []*scriptSink{first, second} {
			if got := strings.Join(verbs(s.snapshot()), " "); got != want {
				t.Errorf("sink %d calls: %s, want %s", i+1, got, want)
			}
		}
		if c := second.snapshot()[3].event.Count; c != 3 {
			t.Errorf("second sink's last patch has count %d, want 3", c)
		}
	})
}

func TestStartAfterShutdownReturnsClosedWatch(t *testing.T) {
	e := newBroadcaster(t)
	join(t, e)
	for i, w := range []watch.Interface{
		e.StartEventWatcher(func(*v1.Event) {}),
		e.StartRecordingToSink(&scriptSink{}),
		e.StartLogging(func(string, ...interface{}) {}),
		e.StartStructuredLogging(0),
	} {
		if _, ok := <-w.ResultChan(); ok {
			t.Errorf("watch %d: ResultChan open after Shutdown", i)
		}
		w.Stop()
		w.Stop()
	}
}

// TestDropIn checks at compile time that herald's values satisfy
// client-go's interfaces, and that a program written against them runs.
func TestDropIn(t *testing.T) {
	var b record.EventBroadcaster = newBroadcaster(t)
	var r record.EventRecorder = b.NewRecorder(scheme.Scheme, v1.EventSource{Component: "c"})
	handle, events := capture()
	b.StartEventWatcher(handle)
	r.Event(pod("foo"), v1.EventTypeNormal, "Started", "hello")
	b.Shutdown()
	if len(events()) != 1 {
		t.Errorf("got %d events, want 1", len(events()))
	}
}

// TestDistinctEventsAtOneInstantAreAllStored: with WithClock's fake clock
// standing still (as a unit test leaves it), or PastEventf given one time
// twice, two different events about one object would get one name, and
// the server would refuse the second (AlreadyExists). herald stamps the
// second a nanosecond later: client-go's fake clientset, behind
// client-go's own sink, stores both.
func TestDistinctEventsAtOneInstantAreAllStored(t *testing.T) {
	e, client, clk := standingStill(t)
	r := e.NewRecorder(scheme.Scheme, v1.EventSource{Component: "c"})
	r.Event(pod("web"), v1.EventTypeNormal, "Scheduled", "assigned")
	r.Event(pod("web"), v1.EventTypeNormal, "Pulled", "image pulled")
	past := metav1.NewTime(clk.Now().Add(-time.Hour))
	r.(*k8sadapter.Recorder).PastEventf(pod("web"), past, v1.EventTypeNormal, "Created", "container created")
	r.(*k8sadapter.Recorder).PastEventf(pod("web"), past, v1.EventTypeWarning, "Unhealthy", "probe failed")
	list := flushAndList(t, e, client)
	if s := e.Stats(); len(list) != 4 || s.Created != 4 || s.FailedRejected != 0 {
		t.Errorf("stored %d events, Stats() = %+v; want all 4 created", len(list), s)
	}
}

// TestCombinedEventAtOneInstantIsStored: with WithClock's fake clock
// standing still, the event that combines ten similar ones is stamped
// like a recorded event, so its name is not that of the first event
// about its object (the server refused it as AlreadyExists, and the
// patches of later similar events went to the first event, overwriting
// its message). client-go's broadcaster, on the system clock, stores the
// same events into client-go's fake clientset.
func TestCombinedEventAtOneInstantIsStored(t *testing.T) {
	similar := func(r record.EventRecorder) {
		for i := range 12 {
			r.Eventf(pod("pull"), v1.EventTypeNormal, "Pulling", "Pulling image layer %d of 12", i+1)
		}
	}
	ctx := klog.NewContext(context.Background(), logr.Discard())
	source := v1.EventSource{Component: "c"}

	anchorClient := fake.NewClientset()
	anchor := record.NewBroadcaster(record.WithContext(ctx))
	anchor.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: anchorClient.CoreV1().Events("")})
	similar(anchor.NewRecorder(scheme.Scheme, source))
	deadline := time.Now().Add(failsafe)
	for !strings.Contains(strings.Join(stored(t, anchorClient), "\n"), "count=3") {
		if time.Now().After(deadline) {
			t.Fatalf("client-go did not store the combined event with count 3:\n%s", strings.Join(stored(t, anchorClient), "\n"))
		}
		time.Sleep(5 * time.Millisecond) // bounded poll of client-go, which offers no flush
	}
	anchor.Shutdown()

	e, client, _ := standingStill(t)
	similar(e.NewRecorder(scheme.Scheme, source))
	if err := e.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	want, got := stored(t, anchorClient), stored(t, client)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("herald stored\n%s\n\nclient-go stored\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s := e.Stats(); s.Created != 10 || s.Patched != 2 || s.FailedRejected != 0 {
		t.Errorf("Stats() = %+v, want 10 created (9 events and the combined one), 2 patched, none rejected", s)
	}
}

// TestPastEventsDoNotRenameLaterOnes: with WithClock's fake clock standing
// still, events about one object recorded now and PastEventf events at
// one past time, interleaved, all get names of their own: a past time no
// longer takes the place of the latest time stamped (the next event of
// now took the name of the first, and the next past one that of the first
// past one, and the server refused both as AlreadyExists).
func TestPastEventsDoNotRenameLaterOnes(t *testing.T) {
	e, client, clk := standingStill(t)
	r := e.NewRecorder(scheme.Scheme, v1.EventSource{Component: "c"})
	past := metav1.NewTime(clk.Now().Add(-time.Hour))
	r.Event(pod("web"), v1.EventTypeNormal, "Scheduled", "assigned")
	r.(*k8sadapter.Recorder).PastEventf(pod("web"), past, v1.EventTypeNormal, "Created", "container created")
	r.Event(pod("web"), v1.EventTypeNormal, "Pulled", "image pulled")
	r.(*k8sadapter.Recorder).PastEventf(pod("web"), past, v1.EventTypeNormal, "Started", "container started")
	list := flushAndList(t, e, client)
	if s := e.Stats(); len(list) != 4 || s.Created != 4 || s.FailedRejected != 0 {
		t.Errorf("stored %d events, Stats() = %+v; want all 4 created", len(list), s)
	}
	for _, ev := range list {
		if want := past.Unix(); ev.Reason == "Created" || ev.Reason == "Started" {
			if ev.FirstTimestamp.Unix() != want {
				t.Errorf("%s stored at %v, want the past time %v", ev.Reason, ev.FirstTimestamp, past)
			}
		}
	}
}

// TestPastEventAheadOfTheClockRenamesNoEvent: with WithClock's fake clock
// standing still, a PastEventf given a later time (the system clock's,
// say) and a clock stepped on and set back, every event about one object
// is stored under a name of its own (the events recorded at the clock's
// instant after the later time took the names of those recorded there
// before it, and the server refused them as AlreadyExists).
func TestPastEventAheadOfTheClockRenamesNoEvent(t *testing.T) {
	e, client, clk := standingStill(t)
	t0 := clk.Now()
	r := e.NewRecorder(scheme.Scheme, v1.EventSource{Component: "c"})
	r.Event(pod("web"), v1.EventTypeNormal, "Scheduled", "assigned")
	r.Event(pod("web"), v1.EventTypeNormal, "Pulled", "image pulled")
	r.(*k8sadapter.Recorder).PastEventf(pod("web"), metav1.NewTime(t0.Add(time.Hour)), v1.EventTypeNormal, "Created", "container created")
	r.Event(pod("web"), v1.EventTypeNormal, "Started", "container started")
	r.Event(pod("web"), v1.EventTypeNormal, "Ready", "pod ready")
	clk.Step(2 * time.Hour)
	r.Event(pod("web"), v1.EventTypeWarning, "Unhealthy", "probe failed")
	clk.SetTime(t0)
	r.Event(pod("web"), v1.EventTypeNormal, "Killing", "stopping container")
	list := flushAndList(t, e, client)
	if s := e.Stats(); len(list) != 7 || s.Created != 7 || s.FailedRejected != 0 {
		t.Errorf("stored %d events, Stats() = %+v; want all 7 created", len(list), s)
	}
}

// standingStill returns a broadcaster on a fake clock that stands still,
// as a unit test leaves it, recording into client-go's fake clientset
// behind client-go's own sink.
func standingStill(t *testing.T) (*k8sadapter.EventBroadcaster, *fake.Clientset, *testclocks.FakeClock) {
	clk := testclocks.NewFakeClock(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	client := fake.NewClientset()
	e := newBroadcaster(t, k8sadapter.WithClock(clk))
	e.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return e, client, clk
}

// flushAndList flushes e and returns the events client stores.
func flushAndList(t *testing.T, e *k8sadapter.EventBroadcaster, client *fake.Clientset) []v1.Event {
	t.Helper()
	if err := e.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	list, err := client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}
