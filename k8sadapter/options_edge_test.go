package k8sadapter_test

// Correlator options at the edges of their range: client-go takes its
// numbers as unsigned, and herald must behave as it does, never panic.

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	testclocks "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/correlate"
	"github.com/heraldgo/herald/k8sadapter"
)

// edgeEvent is an event about one pod with the given message.
func edgeEvent(msg string, at time.Time) *v1.Event {
	t := metav1.NewTime(at)
	return &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("web-0.%x", at.UnixNano()), Namespace: "default"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", UID: "u1", APIVersion: "v1"},
		Reason:         "BackOff",
		Message:        msg,
		Source:         v1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: t,
		LastTimestamp:  t,
		Count:          1,
		Type:           v1.EventTypeWarning,
	}
}

// outcome is what a correlator decided for one event, comparable across
// client-go and herald.
type outcome struct {
	Skip    bool
	Name    string
	Message string
	Count   int32
	Patch   string
}

func outcomeOf(r *record.EventCorrelateResult) outcome {
	if r.Skip {
		return outcome{Skip: true}
	}
	return outcome{Name: r.Event.Name, Message: r.Event.Message, Count: r.Event.Count, Patch: string(r.Patch)}
}

func heraldOutcome(r *k8sadapter.EventCorrelateResult) outcome {
	if r.Skip {
		return outcome{Skip: true}
	}
	return outcome{Name: r.Event.Name, Message: r.Event.Message, Count: r.Event.Count, Patch: string(r.Patch)}
}

// TestCorrelatorOptionsAtTheirEdgesLikeClientGo: client-go takes
// MaxEvents and MaxIntervalInSeconds as unsigned, so a negative interval,
// or one whose time.Duration overflows, starts every group afresh (with
// MaxEvents 1 every event is then combined) and a negative MaxEvents never
// combines. herald returns the same events, patches and skips.
func TestCorrelatorOptionsAtTheirEdgesLikeClientGo(t *testing.T) {
	tests := []struct {
		name string
		opts record.CorrelatorOptions
	}{
		{"MaxEvents 1, negative interval", record.CorrelatorOptions{MaxEvents: 1, MaxIntervalInSeconds: -1}},
		{"MaxEvents 1", record.CorrelatorOptions{MaxEvents: 1}},
		{"negative interval", record.CorrelatorOptions{MaxIntervalInSeconds: -1}},
		{"negative MaxEvents", record.CorrelatorOptions{MaxEvents: -1}},
		{"interval overflowing time.Duration", record.CorrelatorOptions{MaxIntervalInSeconds: 1 << 55}},
		{"MaxEvents 1, interval just past time.Duration", record.CorrelatorOptions{MaxEvents: 1, MaxIntervalInSeconds: int(time.Duration(1<<63-1)/time.Second) + 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := testclocks.NewFakeClock(t0)
			co, ho := tc.opts, tc.opts
			co.Clock, ho.Clock = clk, clk
			cg := record.NewEventCorrelatorWithOptions(co)
			h := k8sadapter.NewEventCorrelatorWithOptions(ho)
			sameAsClientGo(t, cg, h, clk, 4, func(i int) string { return fmt.Sprintf("message %d", i) })
		})
	}
}

// TestHugeIntervalInStartRecordingToSink: the same options through the
// drop-in path never panic the caller.
func TestHugeIntervalInStartRecordingToSink(t *testing.T) {
	e := newBroadcaster(t, k8sadapter.WithCorrelatorOptions(record.CorrelatorOptions{MaxIntervalInSeconds: 1 << 55}))
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("StartRecordingToSink panicked: %v", p)
		}
	}()
	w := e.StartRecordingToSink(&scriptSink{})
	w.Stop()
}

// TestNegativeMaxEventsCallsKeyFunc: with a negative MaxEvents no group is
// ever full, but client-go still calls a KeyFunc on every event, after it
// takes the event's key; what the function does (here: count its calls
// and mark the event's message) happens in herald too.
func TestNegativeMaxEventsCallsKeyFunc(t *testing.T) {
	clk := testclocks.NewFakeClock(t0)
	var calls [2]int
	opts := func(i int) record.CorrelatorOptions {
		return record.CorrelatorOptions{Clock: clk, MaxEvents: -1, KeyFunc: func(e *v1.Event) (string, string) {
			calls[i]++
			e.Message += "!"
			return e.Reason, e.Message
		}}
	}
	cg := record.NewEventCorrelatorWithOptions(opts(0))
	h := k8sadapter.NewEventCorrelatorWithOptions(opts(1))
	sameAsClientGo(t, cg, h, clk, 6, func(i int) string { return fmt.Sprintf("message %d", i%2) })
	if calls[0] != 6 || calls[1] != calls[0] {
		t.Errorf("KeyFunc calls: client-go %d, herald %d; want 6 each", calls[0], calls[1])
	}
}

// TestKeyFuncThatWritesTheEvent: client-go takes an event's key before it
// calls KeyFunc, and its spam key and combined event from the event after.
// A KeyFunc that writes the event's fields (here: stamps its call number
// into the message, or moves it to another object) gets the same events,
// counts and patches from herald: with repeats, with groups that fill
// (distinct messages, so that client-go's random choice of the member it
// forgets decides nothing), and with no groups.
func TestKeyFuncThatWritesTheEvent(t *testing.T) {
	writers := map[string]func(e *v1.Event, n int){
		"message": func(e *v1.Event, n int) { e.Message = fmt.Sprintf("%s #%d", e.Message, n) },
		"object":  func(e *v1.Event, n int) { e.InvolvedObject.Name = fmt.Sprint("pod-", n%3) },
	}
	cases := []struct {
		maxEvents int
		messages  int // distinct messages, in turn
	}{{0, 2}, {3, 100}, {-1, 2}}
	for name, write := range writers {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/MaxEvents=%d", name, tc.maxEvents), func(t *testing.T) {
				clk := testclocks.NewFakeClock(t0)
				var calls [2]int
				opts := func(i int) record.CorrelatorOptions {
					return record.CorrelatorOptions{Clock: clk, MaxEvents: tc.maxEvents, BurstSize: 5,
						KeyFunc: func(e *v1.Event) (string, string) {
							calls[i]++
							write(e, calls[i])
							return e.Reason, e.Message
						}}
				}
				cg := record.NewEventCorrelatorWithOptions(opts(0))
				h := k8sadapter.NewEventCorrelatorWithOptions(opts(1))
				sameAsClientGo(t, cg, h, clk, 8, func(i int) string { return fmt.Sprint("message ", i%tc.messages) })
			})
		}
	}
}

// TestNegativeMaxEventsPanickingKeyFunc: the KeyFunc that a negative
// MaxEvents still calls is named when it panics, and the event is
// recorded as it is.
func TestNegativeMaxEventsPanickingKeyFunc(t *testing.T) {
	h := k8sadapter.NewEventCorrelatorWithOptions(record.CorrelatorOptions{MaxEvents: -1,
		KeyFunc: func(*v1.Event) (string, string) { panic("boom") }})
	e := edgeEvent("message", t0)
	got, err := h.EventCorrelate(e)
	if !errors.Is(err, correlate.ErrPanic) || !strings.Contains(err.Error(), "panic in KeyFunc: boom") {
		t.Errorf("EventCorrelate error %v, want one wrapping correlate.ErrPanic naming KeyFunc", err)
	}
	if got == nil || got.Skip || !cmp.Equal(got.Event, e) {
		t.Errorf("EventCorrelate = %+v, want the event to record as it is", got)
	}
}

// sameAsClientGo correlates n events, a second apart on clk, with the
// messages message gives, through client-go's correlator and herald's,
// and reports every event whose outcome differs.
func sameAsClientGo(t *testing.T, cg *record.EventCorrelator, h *k8sadapter.EventCorrelator, clk *testclocks.FakeClock, n int, message func(i int) string) {
	t.Helper()
	for i := range n {
		clk.Step(time.Second)
		e := edgeEvent(message(i), clk.Now())
		want, err := cg.EventCorrelate(e.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		got, err := h.EventCorrelate(e.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(outcomeOf(want), heraldOutcome(got)); diff != "" {
			t.Errorf("event %d: EventCorrelate differs from client-go's (-client-go +herald):\n%s", i, diff)
		}
	}
}
