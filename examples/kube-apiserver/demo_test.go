package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestDemo runs the demo against the shared apiserver and checks what it
// prints.
func TestDemo(t *testing.T) {
	var out strings.Builder
	if err := demo(logged(t), &out, server.Client, "demo"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`(?m)^\d+s +Warning +BackOff +pod/checkout-7d9f +8 +Back-off restarting failed container app in pod checkout-7d9f$`,
		`(?m)^\d+s +Normal +Pulling +pod/search-5c2b +1 +Pulling image layer 9 of 12$`,
		`(?m)^\d+s +Normal +Pulling +pod/search-5c2b +3 +\(combined from similar events\): Pulling image layer 12 of 12$`,
		`(?m)^\d+s +Warning +Unhealthy +pod/cart-0 +25 +Readiness probe failed: HTTP probe failed with statuscode: 503$`,
		`(?m)^herald: recorded 60 = written 45 \+ spam-skipped 15 \+ dropped 0 \+ failed 0 \+ abandoned 0$`,
		`(?m)^  written 45 = created 12 \+ patched 33 = first occurrences 11 \+ repeats 31 \+ combined 3; retries 0$`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("demo output lacks a line matching %s:\n%s", want, out.String())
		}
	}
	if got := strings.Count(out.String(), "pod/search-5c2b"); got != 10 {
		t.Errorf("demo printed %d events about pod/search-5c2b, want 10 (9, then the combined one):\n%s", got, out.String())
	}
}
