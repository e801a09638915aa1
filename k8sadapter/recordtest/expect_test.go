package recordtest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/k8sadapter/recordtest"
)

// failures is a testing.TB that keeps what the helpers report.
type failures struct {
	testing.TB // nil: only Helper and Errorf are called
	msgs       []string
}

func (f *failures) Helper() {}
func (f *failures) Errorf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

// twoEvents returns a Recorder that kept a Warning and a Normal event.
func twoEvents() *recordtest.Recorder {
	r := recordtest.New(recordtest.Options{Clock: clocktesting.NewFakeClock(t0)})
	r.Eventf(pod, v1.EventTypeWarning, "Failed", "pull %q", "app")
	r.AnnotatedEventf(node, map[string]string{"a": "b"}, v1.EventTypeNormal, "Ready", "ok")
	return r
}

func TestMatch(t *testing.T) {
	e := recordtest.Event{Object: podRef, Type: "Warning", Reason: "Failed", Action: "Pull", Message: "pull app",
		Annotations: map[string]string{"a": "b"}, Count: 3}
	tests := []struct {
		m    recordtest.Match
		want bool
	}{
		{recordtest.Match{}, true},
		{recordtest.Match{Kind: "Pod", Namespace: "shop", Name: "web-0"}, true},
		{recordtest.Match{Kind: "Node"}, false},
		{recordtest.Match{Namespace: "other"}, false},
		{recordtest.Match{Name: "web-1"}, false},
		{recordtest.Match{Type: "Warning", Reason: "Failed", Action: "Pull"}, true},
		{recordtest.Match{Type: "Normal"}, false},
		{recordtest.Match{Reason: "Started"}, false},
		{recordtest.Match{Action: "Bind"}, false},
		{recordtest.Match{Message: "pull app"}, true},
		{recordtest.Match{Message: "pull"}, false},
		{recordtest.Match{MessageContains: "ll a"}, true},
		{recordtest.Match{MessageContains: "push"}, false},
		{recordtest.Match{Annotations: map[string]string{"a": "b"}}, true},
		{recordtest.Match{Annotations: map[string]string{"a": "c"}}, false},
		{recordtest.Match{Annotations: map[string]string{"x": ""}}, false},
		{recordtest.Match{Count: 3}, true},
		{recordtest.Match{Count: 1}, false},
		{recordtest.Match{Err: "reference"}, false},
	}
	for _, tc := range tests {
		if got := tc.m.Matches(e); got != tc.want {
			t.Errorf("%v.Matches(%v) = %v, want %v", tc.m, e, got, tc.want)
		}
	}
	bad := recordtest.Event{Reason: "Failed", Err: "Could not construct reference, will not report event: x"}
	if (recordtest.Match{Reason: "Failed"}).Matches(bad) || !(recordtest.Match{Err: "reference"}).Matches(bad) {
		t.Errorf("a Match must match an event with Err only when it asks for the error")
	}
}

func TestMatchString(t *testing.T) {
	m := recordtest.Match{Kind: "Pod", Reason: "Failed", MessageContains: "pull", Annotations: map[string]string{"a": "b"}, Count: 2}
	want := `Match{Kind: "Pod", Reason: "Failed", MessageContains: "pull", Annotations: map[a:b], Count: 2}`
	if got := m.String(); got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
}

func TestExpectEvent(t *testing.T) {
	r := twoEvents()
	var f failures
	if e := r.ExpectEvent(&f, recordtest.Match{Reason: "Ready"}); e.Object.Name != "node-1" || len(f.msgs) != 0 {
		t.Errorf("ExpectEvent(Ready) = %v, failures %q; want node-1's event, none", e, f.msgs)
	}
	r.ExpectEvent(&f, recordtest.Match{Reason: "Started"})
	want := `recordtest: no event matches Match{Reason: "Started"}; recorded 2:
    Warning Failed Pod shop/web-0: "pull \"app\""
    Normal Ready Node node-1: "ok" annotations=map[a:b]`
	if len(f.msgs) != 1 || f.msgs[0] != want {
		t.Errorf("failure = %q, want %q", f.msgs, want)
	}
}

func TestExpectNoEvent(t *testing.T) {
	r := twoEvents()
	var f failures
	r.ExpectNoEvent(&f, recordtest.Match{Reason: "Started"})
	r.ExpectNoEvent(&f, recordtest.Match{Type: "Warning"})
	want := `recordtest: want no event matching Match{Type: "Warning"}; recorded 2:
  ! Warning Failed Pod shop/web-0: "pull \"app\""
    Normal Ready Node node-1: "ok" annotations=map[a:b]`
	if len(f.msgs) != 1 || f.msgs[0] != want {
		t.Errorf("failures = %q, want %q", f.msgs, want)
	}
}

func TestExpectEvents(t *testing.T) {
	r := twoEvents()
	tests := []struct {
		name string
		want []recordtest.Match
		msg  string // the failure; none if empty
	}{
		{"equal", []recordtest.Match{{Reason: "Failed"}, {Reason: "Ready"}}, ""},
		{"one differs", []recordtest.Match{{Reason: "Failed"}, {Reason: "Started"}}, `
    Warning Failed Pod shop/web-0: "pull \"app\""
  - Match{Reason: "Started"}
  + Normal Ready Node node-1: "ok" annotations=map[a:b]`},
		{"one missing", []recordtest.Match{{Reason: "Failed"}, {Reason: "Ready"}, {Reason: "Gone"}}, `
    Warning Failed Pod shop/web-0: "pull \"app\""
    Normal Ready Node node-1: "ok" annotations=map[a:b]
  - Match{Reason: "Gone"}`},
		{"none wanted", nil, `
  + Warning Failed Pod shop/web-0: "pull \"app\""
  + Normal Ready Node node-1: "ok" annotations=map[a:b]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f failures
			r.ExpectEvents(&f, tc.want...)
			var want []string
			if tc.msg != "" {
				want = []string{"recordtest: events differ (- want, + recorded):" + tc.msg}
			}
			if strings.Join(f.msgs, "|") != strings.Join(want, "|") {
				t.Errorf("failures = %q, want %q", f.msgs, want)
			}
		})
	}
}

func TestAwaitEventContextEnds(t *testing.T) {
	r := twoEvents()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var f failures
	if e := r.AwaitEvent(ctx, &f, recordtest.Match{Reason: "Failed"}); e.Reason != "Failed" || len(f.msgs) != 0 {
		t.Errorf("AwaitEvent(Failed) = %v, %q; want the event kept before, no failure", e, f.msgs)
	}
	r.AwaitEvent(ctx, &f, recordtest.Match{Reason: "Started"})
	if len(f.msgs) != 1 || !strings.HasPrefix(f.msgs[0], `recordtest: no event matches Match{Reason: "Started"} (context canceled); recorded 2:`) {
		t.Errorf("failures = %q, want one naming the Match, the context's error and the events", f.msgs)
	}
}

func TestListingNone(t *testing.T) {
	var r recordtest.Recorder
	var f failures
	r.ExpectEvent(&f, recordtest.Match{Reason: "Failed"})
	if want := `recordtest: no event matches Match{Reason: "Failed"}; recorded none`; len(f.msgs) != 1 || f.msgs[0] != want {
		t.Errorf("failures = %q, want %q", f.msgs, want)
	}
}

func TestEventString(t *testing.T) {
	tests := []struct {
		e    recordtest.Event
		want string
	}{
		{recordtest.Event{Object: podRef, Type: "Normal", Reason: "R", Message: "m", Count: 1}, `Normal R Pod shop/web-0: "m"`},
		{recordtest.Event{Object: podRef, Related: &nodeRef, Type: "Normal", Reason: "R", Action: "A", Message: "m", Count: 4},
			`Normal R action=A Pod shop/web-0 related=Node node-1 count=4: "m"`},
		{recordtest.Event{Type: "Bogus", Reason: "R", Count: 1, Err: "no"}, `Bogus R (no object): "" err="no"`},
	}
	for _, tc := range tests {
		if got := tc.e.String(); got != tc.want {
			t.Errorf("String() = %s, want %s", got, tc.want)
		}
	}
}
