package recordtest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/k8sadapter/recordtest"
)

// TestCorrelatedSpam checks client-go's spam numbers on a clock that stands
// still: 30 repeats at one instant are stored as one event of count 25,
// 5 skipped; 301 s later the next passes with the count of every call.
func TestCorrelatedSpam(t *testing.T) {
	clock := clocktesting.NewFakeClock(t0)
	r := recordtest.New(recordtest.Options{Correlate: true, Clock: clock})
	for range 30 {
		r.Event(pod, v1.EventTypeWarning, "BackOff", "restarting")
	}
	want := recordtest.Event{Object: podRef, Type: "Warning", Reason: "BackOff", Message: "restarting", FirstTime: t0, Time: t0, Count: 25}
	if d := cmp.Diff([]recordtest.Event{want}, r.Events()); d != "" || r.Skipped() != 5 {
		t.Fatalf("Skipped() = %d, want 5; events (-want +got):\n%s", r.Skipped(), d)
	}
	clock.Step(301 * time.Second)
	r.Event(pod, v1.EventTypeWarning, "BackOff", "restarting")
	want.Count, want.Time = 31, t0.Add(301*time.Second)
	if d := cmp.Diff([]recordtest.Event{want}, r.Events()); d != "" {
		t.Errorf("after 301 s (-want +got):\n%s", d)
	}
}

// TestCorrelatedFirstSkipped checks the sink's 404: an event whose first
// occurrence was skipped is patched when it repeats, finds nothing stored,
// and is created with the count and first time of both.
func TestCorrelatedFirstSkipped(t *testing.T) {
	clock := clocktesting.NewFakeClock(t0)
	r := recordtest.New(recordtest.Options{Correlate: true, Clock: clock, CorrelatorOptions: record.CorrelatorOptions{BurstSize: 1}})
	r.Event(pod, v1.EventTypeWarning, "A", "a")
	r.Event(pod, v1.EventTypeWarning, "B", "b") // the pod's one token is spent: skipped
	clock.Step(301 * time.Second)
	r.Event(pod, v1.EventTypeWarning, "B", "b")
	want := []recordtest.Event{
		{Object: podRef, Type: "Warning", Reason: "A", Message: "a", FirstTime: t0, Time: t0, Count: 1},
		{Object: podRef, Type: "Warning", Reason: "B", Message: "b", FirstTime: t0, Time: t0.Add(301 * time.Second), Count: 2},
	}
	if d := cmp.Diff(want, r.Events()); d != "" || r.Skipped() != 1 {
		t.Errorf("Skipped() = %d, want 1; events (-want +got):\n%s", r.Skipped(), d)
	}
}

// TestCorrelatedCombinedAtOneInstant checks that two groups about one
// object combined at one instant, whose combined events client-go names
// alike, are kept apart, each patched by its own repeats, without the
// annotations of their members.
func TestCorrelatedCombinedAtOneInstant(t *testing.T) {
	r := recordtest.New(recordtest.Options{Correlate: true, Clock: clocktesting.NewFakeClock(t0),
		CorrelatorOptions: record.CorrelatorOptions{BurstSize: 100}})
	for i := range 11 {
		for _, reason := range []string{"Pulling", "BackOff"} {
			r.AnnotatedEventf(node, map[string]string{"a": "b"}, v1.EventTypeNormal, reason, "%s %d", reason, i)
		}
	}
	events := r.Events()
	if len(events) != 20 {
		t.Fatalf("kept %d events, want 9 + 1 per reason:\n%v", len(events), events)
	}
	for i, reason := range []string{"Pulling", "BackOff"} {
		want := recordtest.Event{Object: nodeRef, Type: "Normal", Reason: reason,
			Message: fmt.Sprintf("(combined from similar events): %s 10", reason), FirstTime: t0, Time: t0, Count: 2}
		if d := cmp.Diff(want, events[18+i]); d != "" {
			t.Errorf("combined %s (-want +got):\n%s", reason, d)
		}
	}
}

// TestReset checks that Reset forgets the events, the lines, the skips and
// what the correlator remembers.
func TestReset(t *testing.T) {
	for _, correlate := range []bool{false, true} {
		r := recordtest.New(recordtest.Options{Correlate: correlate, Clock: clocktesting.NewFakeClock(t0)})
		for range 30 {
			r.Event(pod, v1.EventTypeWarning, "BackOff", "restarting")
		}
		r.Reset()
		if len(r.Events()) != 0 || len(r.Strings()) != 0 || r.Skipped() != 0 {
			t.Fatalf("correlate %v: after Reset: %v, %q, %d skipped; want nothing", correlate, r.Events(), r.Strings(), r.Skipped())
		}
		r.Event(pod, v1.EventTypeWarning, "BackOff", "restarting")
		r.ExpectEvents(t, recordtest.Match{Reason: "BackOff", Count: 1})
	}
}

// TestCorrelateOnlyCoreEvents checks that the events API's calls and the
// calls with Err are kept one by one in correlated mode.
func TestCorrelateOnlyCoreEvents(t *testing.T) {
	r := recordtest.New(recordtest.Options{Correlate: true})
	for range 3 {
		r.EventsRecorder().Eventf(pod, nil, v1.EventTypeNormal, "Scheduled", "Binding", "to node-1")
		r.Event(nil, v1.EventTypeNormal, "NoObject", "m")
	}
	if got := len(r.Events()); got != 6 {
		t.Errorf("kept %d events, want 6: %v", got, r.Events())
	}
}
