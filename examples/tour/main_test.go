package main

import (
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
		"60 alerts in = 15 under a new key (one line each above) + 45 repeats.",
		"Among the 60: 5 folded into a combined alert; 15 skipped as spam (counted, not written), so 45 to write.",
		"Warning  BackOff    pod/checkout-7d9f  8      Back-off restarting failed container",
		"3      (combined from similar events): Pulling image layer 12 of 12",
		"Warning  Unhealthy  pod/cart-0         25     Readiness probe failed",
		"What happened to the 65 events recorded:",
		"    50  written: 17 created, 33 patched into an earlier event",
		"        as 16 first occurrences, 31 repeats (count > 1), 3 combined events",
		"    15  skipped by the spam filter (counted into the next write)",
		"     0  dropped (invalid, queue full, after shutdown)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("tour output lacks %q:\n%s", want, got)
		}
	}
}
