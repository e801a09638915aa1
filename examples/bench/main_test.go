package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun runs every measurement for a few iterations and checks that the
// table and the chart come out.
func TestRun(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "chart.svg")
	var out strings.Builder
	if err := run(&out, "20x", svg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"100 watchers, read via Events", "apimachinery", "repeat", "aggregate", "client-go", "chart of fan-out time per value: " + svg, "the chart goes to " + svg, " 1 watcher  "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "1 watchers") {
		t.Errorf("output says \"1 watchers\":\n%s", out.String())
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.HasPrefix(s, "<svg") || strings.Count(s, "<polyline") != 3 {
		t.Errorf("chart is not an SVG with three series:\n%s", s)
	}
	for _, want := range []string{"watchers (log scale)", "time per value (log scale)", "GOMAXPROCS=", "benchtime 20x"} {
		if !strings.Contains(s, want) {
			t.Errorf("chart lacks %q:\n%s", want, s)
		}
	}
}
