package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun runs the example and checks what the apiserver stored.
func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`Warning  Failed     pod/worker-0  4      Failed to pull image "registry.example/app:v2": not found`,
		"Normal   Scheduled  pod/web-0     1      Successfully assigned shop/web-0",
		`"msg"="Event occurred"`,
		"recorded 12 = written 12 + spam-skipped 0 + dropped 0 + failed 0 + abandoned 0",
		"written 12 = created 9 + patched 3 = first occurrences 9 + repeats 3 + combined 0",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
