package k8sadapter_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	testclocks "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/k8sadapter"
)

func fuzzEvent(component, host, name, fieldPath, reason, message string) *v1.Event {
	return &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "e", Namespace: "ns"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: name, FieldPath: fieldPath, UID: "u", APIVersion: "v1"},
		Source:         v1.EventSource{Component: component, Host: host},
		Reason:         reason, Message: message, Type: v1.EventTypeNormal, Count: 1,
		FirstTimestamp: metav1.NewTime(t0), LastTimestamp: metav1.NewTime(t0),
	}
}

// FuzzEventKeyFieldBoundary moves the boundary between two adjacent key
// fields: the events are different, so the second must not count as a
// repeat of the first (client-go's concatenated keys say it does).
func FuzzEventKeyFieldBoundary(f *testing.F) {
	f.Add("web-0", "spec.containers{app}", uint8(2))
	f.Add("kubelet", "node-1", uint8(3))
	f.Fuzz(func(t *testing.T, left, right string, shift uint8) {
		k := int(shift) % (len(left) + 1)
		if k == 0 {
			return
		}
		pairs := [][2]*v1.Event{
			{fuzzEvent("c", "h", left, right, "R", "m"), fuzzEvent("c", "h", left[:len(left)-k], left[len(left)-k:]+right, "R", "m")},
			{fuzzEvent(left, right, "n", "", "R", "m"), fuzzEvent(left[:len(left)-k], left[len(left)-k:]+right, "n", "", "R", "m")},
			{fuzzEvent("c", "h", "n", "", left, right), fuzzEvent("c", "h", "n", "", left[:len(left)-k], left[len(left)-k:]+right)},
		}
		for _, p := range pairs {
			c := k8sadapter.NewEventCorrelator(testclocks.NewFakeClock(t0))
			c.EventCorrelate(p[0])
			r, err := c.EventCorrelate(p[1])
			if err != nil {
				t.Fatal(err)
			}
			if r.Event.Count != 1 {
				t.Fatalf("%+v counted as a repeat of %+v", p[1].InvolvedObject, p[0].InvolvedObject)
			}
		}
	})
}

// FuzzEventCorrelateMatchesClientGo sends an arbitrary event twice, a
// moment apart, to client-go's correlator and herald's: the decisions, the
// events and the patches must be the same, whatever the fields hold (where
// client-go's concatenated keys are not fooled: the fields here are fixed
// per position, so boundaries never shift).
func FuzzEventCorrelateMatchesClientGo(f *testing.F) {
	f.Add("kubelet", "node-1", "web-0", "spec.containers{app}", "BackOff", "Back-off <restarting> & \"failed\"", int32(1), int64(3))
	f.Add("", "", "", "", "", "", int32(0), int64(0))
	f.Add("a", "b", "Bad_Name", "", "R", "\xff\xfe", int32(-3), int64(601))
	f.Fuzz(func(t *testing.T, component, host, name, fieldPath, reason, message string, count int32, gap int64) {
		e := fuzzEvent(component, host, name, fieldPath, reason, message)
		e.Count = count
		correlateBoth(t, time.Duration(gap%1000)*time.Second, e, e, e)
	})
}

// FuzzCombinedEventMatchesClientGo sends eleven events about one object
// that differ in their message (the fuzzed message with a suffix), a
// moment apart, to client-go's correlator and herald's: the tenth is
// combined and the eleventh repeats the combined event; the decisions,
// the events (the combined message above all, short enough to be built in
// the result's room or not) and the patches must be the same.
func FuzzCombinedEventMatchesClientGo(f *testing.F) {
	f.Add("Back-off restarting failed container app in pod web-0", int64(1))
	f.Add("", int64(0))
	f.Add(strings.Repeat("long message <&> ", 12), int64(2))
	f.Fuzz(func(t *testing.T, message string, gap int64) {
		es := make([]*v1.Event, 11)
		for i := range es {
			es[i] = fuzzEvent("kubelet", "node-1", "web-0", "spec.containers{app}", "BackOff", fmt.Sprint(message, " ", i))
		}
		correlateBoth(t, time.Duration(gap%10)*time.Second, es...)
	})
}

// correlateBoth sends copies of es, in order, step apart on fake clocks,
// to client-go's correlator and herald's, and checks that the results are
// the same.
func correlateBoth(t *testing.T, step time.Duration, es ...*v1.Event) {
	t.Helper()
	correlateBothFrom(t, t0, step, es...)
}

// correlateBothFrom is correlateBoth with the clocks starting at start.
func correlateBothFrom(t *testing.T, start time.Time, step time.Duration, es ...*v1.Event) {
	t.Helper()
	ac, hc := testclocks.NewFakeClock(start), testclocks.NewFakeClock(start)
	anchor := record.NewEventCorrelator(ac)
	herald := k8sadapter.NewEventCorrelator(hc)
	for i, e := range es {
		want, _ := anchor.EventCorrelate(e.DeepCopy())
		got, _ := herald.EventCorrelate(e.DeepCopy())
		sameResult(t, i, e, want, got)
		ac.Step(step)
		hc.Step(step)
	}
}

// TestCombinedPatchPastYear9999: a combined event stamped past the year
// 9999 has a longer time in its patch's head, which its message follows
// in the result's room; its patch is still client-go's.
func TestCombinedPatchPastYear9999(t *testing.T) {
	es := make([]*v1.Event, 11)
	for i := range es {
		es[i] = fuzzEvent("kubelet", "node-1", "web-0", "", "BackOff", fmt.Sprint("message ", i))
	}
	correlateBothFrom(t, time.Date(10000, 1, 2, 3, 4, 5, 0, time.UTC), time.Second, es...)
}
