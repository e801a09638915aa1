package main

import (
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun runs the tour and checks the lines a reader relies on.
func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"dashboard  DropOldest  5      5         15       16 17 18 19 20",
		"mailer     DropNewest  5      5         15       1 2 3 4 5",
		"published 20; dropped: 15 newest, 15 oldest",
		"(combined from similar events): p99 530ms",
		"60 alerts in: 45 counted on the 15 lines above (COUNT; the combined line stands for 5 similar ones)",
		"           + 15 skipped as spam (SKIPPED: never written, reported in 4 summaries).",
		"Warning  BackOff    pod/checkout-7d9f  8      Back-off restarting failed container",
		"3      (combined from similar events): Pulling image layer 12 of 12",
		"Warning  Unhealthy  pod/cart-0         25     Readiness probe failed",
		"What happened to the 65 events recorded:",
		"    50  written: 17 created, 33 patched into an earlier event",
		"        as 16 first occurrences, 31 repeats of them (count > 1), 3 writes of combined events",
		"    15  skipped by the spam filter (counted, never written, as client-go skips them)",
		"     0  dropped (invalid, queue full, after shutdown)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("tour output lacks %q:\n%s", want, got)
		}
	}
}

// TestAlertTableAddsUp checks that the storm's summary says what its table
// shows: the COUNT column sums to the alerts counted, the SKIPPED column
// to those skipped, and there is one line per key.
func TestAlertTableAddsUp(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	lines, counted, skipped := 0, 0, 0
	inTable := false
	for line := range strings.Lines(out.String()) {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "SERVICE":
			inTable = true
		case inTable && len(f) >= 5:
			var c, s int
			if _, err := fmt.Sscan(f[2]+" "+f[3], &c, &s); err != nil {
				inTable = false
				continue
			}
			lines, counted, skipped = lines+1, counted+c, skipped+s
		default:
			inTable = false
		}
	}
	want := fmt.Sprintf("60 alerts in: %d counted on the %d lines above", counted, lines)
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), fmt.Sprintf("+ %d skipped as spam", skipped)) {
		t.Errorf("the table sums to %d counted on %d lines and %d skipped; the summary says otherwise:\n%s", counted, lines, skipped, out.String())
	}
	if counted+skipped != 60 {
		t.Errorf("COUNT %d + SKIPPED %d = %d, want the 60 alerts", counted, skipped, counted+skipped)
	}
}
