package events_test

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clientevents "k8s.io/client-go/tools/events"

	"github.com/heraldgo/herald/k8sadapter/events"
)

// step is one Eventf call of a script.
type step struct {
	regarding, related string
	eventType, reason  string
	action, note       string
}

// script has events that stay single, events that form series of two, and
// a related object; series stop at two occurrences because client-go
// writes later ones only after six minutes of real time.
var script = []step{
	{"web-0", "", v1.EventTypeNormal, "Scheduled", "Binding", "assigned to node-1"},
	{"web-1", "", v1.EventTypeWarning, "FailedScheduling", "Scheduling", "0/3 nodes available"},
	{"web-1", "", v1.EventTypeWarning, "FailedScheduling", "Scheduling", "0/4 nodes available"}, // isomorphic: note differs
	{"web-2", "node-1", v1.EventTypeNormal, "Preempted", "Preempting", "by web-9"},
	{"web-2", "node-1", v1.EventTypeNormal, "Preempted", "Preempting", "by web-9"},
	{"web-2", "node-2", v1.EventTypeNormal, "Preempted", "Preempting", "by web-9"}, // another related object: another series
	{"web-3", "", v1.EventTypeNormal, "Pulled", "Pulling", "image pulled"},
	{"web-3", "", v1.EventTypeNormal, "Pulled", "Verifying", "image verified"}, // another action
}

func (s step) record(r clientevents.EventRecorder) {
	var related *v1.Node
	if s.related != "" {
		related = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.related, UID: "n"}}
	}
	if related == nil {
		r.Eventf(pod(s.regarding), nil, s.eventType, s.reason, s.action, "%s", s.note)
		return
	}
	r.Eventf(pod(s.regarding), related, s.eventType, s.reason, s.action, "%s", s.note)
}

// storedSummary lists what the server holds, without what depends on the
// clock (names, event times, series times).
func storedSummary(t *testing.T, client *fake.Clientset) []string {
	t.Helper()
	list, err := client.EventsV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return summarize(list.Items)
}

func summarize(evs []eventsv1.Event) []string {
	var lines []string
	for _, e := range evs {
		related, series := "-", "-"
		if e.Related != nil {
			related = e.Related.Name
		}
		if e.Series != nil {
			series = fmt.Sprint(e.Series.Count)
		}
		lines = append(lines, fmt.Sprintf("%s/%s %s/%s related=%s %s %s %s %q series=%s by=%s", e.Namespace, e.Name[:strings.IndexByte(e.Name+".", '.')],
			e.Regarding.Kind, e.Regarding.Name, related, e.Type, e.Reason, e.Action, e.Note, series, e.ReportingController))
	}
	sort.Strings(lines)
	return lines
}

// TestSameEventsAsClientGo records the same script through client-go's
// tools/events broadcaster and herald's, each into client-go's fake
// clientset behind client-go's EventSinkImpl, and compares what was stored.
// client-go writes each event on a goroutine of its own, so its script
// waits for each write before the next event, which is the order herald
// keeps by itself.
func TestSameEventsAsClientGo(t *testing.T) {
	ctx, cancel := context.WithCancel(quiet)
	defer cancel()

	anchorClient := fake.NewClientset()
	anchor := clientevents.NewBroadcaster(&clientevents.EventSinkImpl{Interface: anchorClient.EventsV1()})
	if err := anchor.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	ar := anchor.NewRecorder(scheme.Scheme, "test-scheduler")
	want := 0
	seen := map[string]int{}
	for _, s := range script {
		k := fmt.Sprint(s.regarding, s.related, s.action)
		seen[k]++
		if seen[k] <= 2 {
			want++ // a create, or the patch of a series of two
		}
		s.record(ar)
		deadline := time.Now().Add(30 * time.Second)
		for countWrites(anchorClient) < want {
			if time.Now().After(deadline) {
				t.Fatalf("client-go made %d writes, want %d", countWrites(anchorClient), want)
			}
			time.Sleep(5 * time.Millisecond) // bounded poll: client-go writes on goroutines of its own
		}
	}
	cancel()
	anchor.Shutdown()

	heraldClient := fake.NewClientset()
	herald := events.NewBroadcaster(&clientevents.EventSinkImpl{Interface: heraldClient.EventsV1()})
	if err := herald.StartRecordingToSinkWithContext(quiet); err != nil {
		t.Fatal(err)
	}
	hr := herald.NewRecorder(scheme.Scheme, "test-scheduler")
	for _, s := range script {
		s.record(hr)
		time.Sleep(time.Microsecond) // distinct event names, as the other run has
	}
	herald.Shutdown()

	w, g := storedSummary(t, anchorClient), storedSummary(t, heraldClient)
	if strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Errorf("herald stored\n%s\n\nclient-go stored\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	if len(g) != 6 || !strings.Contains(strings.Join(g, "\n"), "series=2") {
		t.Errorf("the script should leave 6 events, some with series of 2:\n%s", strings.Join(g, "\n"))
	}
}

func countWrites(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "create" || a.GetVerb() == "patch" {
			n++
		}
	}
	return n
}

// TestBurstGoroutinesStayFlat records 100 000 events about 1 000 objects
// as fast as it can. herald's goroutine count does not move; client-go's
// grows by a goroutine per event until its queue drains (reported, not
// asserted: it depends on scheduling).
func TestBurstGoroutinesStayFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("burst")
	}
	const n, objects = 100_000, 1_000
	pods := make([]*v1.Pod, objects)
	for i := range pods {
		pods[i] = pod(fmt.Sprint("p", i))
	}
	burst := func(r clientevents.EventRecorder) int {
		peak := 0
		for i := range n {
			r.Eventf(pods[i%objects], nil, v1.EventTypeNormal, "Synced", "Syncing", "generation %d", i%5)
			if i%10_000 == 0 {
				peak = max(peak, runtime.NumGoroutine())
			}
		}
		return max(peak, runtime.NumGoroutine())
	}

	baseline := runtime.NumGoroutine()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heapBefore := ms.HeapAlloc
	herald := events.NewBroadcaster(newSink())
	if err := herald.StartRecordingToSinkWithContext(quiet); err != nil {
		t.Fatal(err)
	}
	heraldPeak := burst(herald.NewRecorder(scheme.Scheme, "burst"))
	herald.Shutdown()
	st := herald.Stats()
	if extra := heraldPeak - baseline; extra > 3 {
		t.Errorf("herald ran %d goroutines more than before the burst, want at most 3 (distributor and writer)", extra)
	}
	if got := st.Queued; got != n {
		t.Errorf("herald accounted for %d of %d events: %+v", got, n, st)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heraldHeap := ms.HeapAlloc

	ctx, cancel := context.WithCancel(quiet)
	anchor := clientevents.NewBroadcaster(newSink())
	if err := anchor.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	anchorPeak := burst(anchor.NewRecorder(scheme.Scheme, "burst"))
	// Let client-go's goroutines drain before shutting it down.
	deadline := time.Now().Add(time.Minute)
	for runtime.NumGoroutine() > baseline+10 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	anchor.Shutdown()
	t.Logf("goroutines before %d; peak during a burst of %d events: herald %d, client-go %d; herald queued %d; heap %d KiB before, %d KiB after herald's burst",
		baseline, n, heraldPeak, anchorPeak, st.Queued, heapBefore>>10, heraldHeap>>10)
}
