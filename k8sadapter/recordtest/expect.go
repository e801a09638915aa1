package recordtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// The Expect helpers fail the test with t.Errorf, so they may be called
// from any goroutine, and the test goes on; each message lists every event
// kept, so that a failure says what was recorded instead.

// ExpectEvent checks that an event kept matches m, and returns the first
// that does. Otherwise it fails the test, listing the events kept, and
// returns the zero Event. It does not wait: see AwaitEvent.
func (r *Recorder) ExpectEvent(t testing.TB, m Match) Event {
	t.Helper()
	events := r.Events()
	for _, e := range events {
		if m.Matches(e) {
			return e
		}
	}
	t.Errorf("recordtest: no event matches %v; %s", m, listing(events, nil))
	return Event{}
}

// ExpectNoEvent checks that no event kept matches m. Otherwise it fails the
// test, listing the events kept, the ones that match marked with '!'.
func (r *Recorder) ExpectNoEvent(t testing.TB, m Match) {
	t.Helper()
	events := r.Events()
	for _, e := range events {
		if m.Matches(e) {
			t.Errorf("recordtest: want no event matching %v; %s", m, listing(events, m.Matches))
			return
		}
	}
}

// ExpectEvents checks that the events kept are, in order, one for each of
// want, the i-th matching want[i]. Otherwise it fails the test with a
// line-by-line comparison: "  " for an event that matches its Match,
// "- " for a Match not met, "+ " for an event kept in its place.
// ExpectEvents(t) checks that nothing was kept.
func (r *Recorder) ExpectEvents(t testing.TB, want ...Match) {
	t.Helper()
	events := r.Events()
	var b strings.Builder
	ok := len(events) == len(want)
	for i := range max(len(events), len(want)) {
		switch {
		case i < len(events) && i < len(want) && want[i].Matches(events[i]):
			fmt.Fprintf(&b, "\n    %v", events[i])
			continue
		case i < len(want):
			fmt.Fprintf(&b, "\n  - %v", want[i])
		}
		if i < len(events) {
			fmt.Fprintf(&b, "\n  + %v", events[i])
		}
		ok = false
	}
	if !ok {
		t.Errorf("recordtest: events differ (- want, + recorded):%s", b.String())
	}
}

// AwaitEvent waits, as WaitFor, until an event kept matches m, and returns
// it. If ctx ends first, it fails the test, listing the events kept, and
// returns the zero Event.
func (r *Recorder) AwaitEvent(ctx context.Context, t testing.TB, m Match) Event {
	t.Helper()
	e, err := r.WaitFor(ctx, m.Matches)
	if err != nil {
		t.Errorf("recordtest: no event matches %v (%v); %s", m, err, listing(r.Events(), nil))
	}
	return e
}

// listing lists events one a line, marking with '!' those mark reports.
func listing(events []Event, mark func(Event) bool) string {
	if len(events) == 0 {
		return "recorded none"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "recorded %d:", len(events))
	for _, e := range events {
		prefix := "    "
		if mark != nil && mark(e) {
			prefix = "  ! "
		}
		fmt.Fprintf(&b, "\n%s%v", prefix, e)
	}
	return b.String()
}
