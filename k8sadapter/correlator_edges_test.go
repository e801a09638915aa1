package k8sadapter_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	testclocks "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/k8sadapter"
)

// TestPanickingSpamKeyFuncConcurrently: concurrent EventCorrelate calls
// on one correlator whose SpamKeyFunc panics each get their error, and
// the panic path reads nothing another call writes (run with -race).
func TestPanickingSpamKeyFuncConcurrently(t *testing.T) {
	c := k8sadapter.NewEventCorrelatorWithOptions(record.CorrelatorOptions{
		SpamKeyFunc: func(*v1.Event) string { panic("boom") },
	})
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				e := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"}, Count: 1,
					InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "ns"}, Reason: "R", Message: string(rune('a'+g)) + string(rune(i%20))}
				if _, err := c.EventCorrelate(e); err == nil {
					t.Error("no error from a panicking SpamKeyFunc")
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestCountWrapWhenSkipped: an event recorded with Count -1: its second
// occurrence wraps the int32 count to 0, which client-go remembers (its
// next occurrence is new) even when the spam filter refuses that
// occurrence. herald must return what client-go returns.
func TestCountWrapWhenSkipped(t *testing.T) {
	mk := func(clk *testclocks.FakeClock, n int) *v1.Event {
		now := metav1.NewTime(clk.Now())
		return &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "p." + string(rune('a'+n)), Namespace: "ns"}, Count: -1,
			FirstTimestamp: now, LastTimestamp: now,
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "ns"}, Reason: "R", Message: "m",
			Source: v1.EventSource{Component: "c"}}
	}
	opts := func(clk *testclocks.FakeClock) record.CorrelatorOptions {
		return record.CorrelatorOptions{Clock: clk, BurstSize: 1, QPS: 1}
	}
	cclk, hclk := testclocks.NewFakeClock(t0), testclocks.NewFakeClock(t0)
	cg := record.NewEventCorrelatorWithOptions(opts(cclk))
	h := k8sadapter.NewEventCorrelatorWithOptions(opts(hclk))
	for i := range 3 {
		want, werr := cg.EventCorrelate(mk(cclk, i))
		got, gerr := h.EventCorrelate(mk(hclk, i))
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("event %d: errors %v, %v", i, werr, gerr)
		}
		type res struct {
			Event *v1.Event
			Patch string
			Skip  bool
		}
		if diff := cmp.Diff(res{want.Event, string(want.Patch), want.Skip}, res{got.Event, string(got.Patch), got.Skip}); diff != "" {
			t.Errorf("event %d (-client-go +herald):\n%s", i, diff)
		}
		if i == 1 {
			cclk.Step(2 * time.Second)
			hclk.Step(2 * time.Second)
		}
	}
}

// TestFoldedPanicPathNamesEachOccurrence: a MessageFunc that panics
// (folding stays on: only KeyFunc and SpamKeyFunc turn it off), MaxEvents
// 1 so that every event is combined and so reaches it: every event,
// folded ones included, must be stored as the recorder built it, with its
// own generated name.
func TestFoldedPanicPathNamesEachOccurrence(t *testing.T) {
	clk := testclocks.NewFakeClock(t0)
	client := trackerClientset()
	sink := newHeldSink(client, true)
	e := newBroadcaster(t, k8sadapter.WithClock(clk), k8sadapter.WithCorrelatorOptions(record.CorrelatorOptions{
		Clock: clk, MaxEvents: 1, MessageFunc: func(*v1.Event) string { panic("boom") },
	}))
	e.StartRecordingToSink(sink)
	r := recorder(e)
	r.Event(pod("held"), v1.EventTypeNormal, "Held", "held")
	<-sink.held
	var want []string
	for range 5 {
		clk.Step(time.Second)
		r.Event(pod("crash"), v1.EventTypeWarning, "BackOff", "back-off")
		want = append(want, fmt.Sprintf("crash.%x", clk.Now().UnixNano()))
	}
	close(sink.release)
	join(t, e)
	var got []string
	for _, s := range storedEventsOf(t, client) {
		if s.InvolvedObject.Name == "crash" {
			got = append(got, s.Name)
			if s.Count != 1 || !s.FirstTimestamp.Equal(&s.LastTimestamp) || s.Name != fmt.Sprintf("crash.%x", s.FirstTimestamp.UnixNano()) {
				t.Errorf("stored %s count %d first %v last %v", s.Name, s.Count, s.FirstTimestamp, s.LastTimestamp)
			}
		}
	}
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stored names (-want +got):\n%s", diff)
	}
	if st := e.Stats(); st.Folded == 0 {
		t.Errorf("nothing folded: %+v", st)
	}
}

// storedEventsOf lists the events c stores.
func storedEventsOf(t *testing.T, c interface {
	CoreV1() typedcorev1.CoreV1Interface
}) []v1.Event {
	l, err := c.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}
