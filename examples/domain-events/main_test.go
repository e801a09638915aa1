package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun runs the example and checks the lines its comments promise.
func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"published 45 events; audit wrote 45 (Block: none lost), each job's in order: true; 1 write retried",
		"dashboard (queue 4, DropOldest) kept events [42 43 44 45] and dropped 41 older ones",
		"backup   disk full",
		"x6",
		"(combined from similar events): timeout after 35s",
		"sync     connection refused                                   x10 (+5 skipped, reported by a summary)",
		"correlator: 27 failures = 22 recorded + 0 carried by a later count + 5 in summaries + 0 unreported",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
