package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/k8sadapter/recordtest"
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

// TestReconcile is the controller's unit test: the reconciles record
// through a test recorder that keeps what a sink would store, and the
// test asserts the events TestRun finds in the apiserver, with no
// broadcaster, apiserver or waiting.
func TestReconcile(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	recorder := recordtest.New(recordtest.Options{Correlate: true, Clock: clocktesting.NewFakeClock(now)})
	c := &controller{recorder: recorder} // reconcile reads no client

	c.reconcileAll(context.Background())

	recorder.ExpectEvent(t, recordtest.Match{Type: v1.EventTypeWarning, Reason: "Failed", Kind: "Pod", Namespace: "shop", Name: "worker-0",
		Message: `Failed to pull image "registry.example/app:v2": not found`, Count: 4})
	for _, name := range []string{"web-0", "web-1"} {
		recorder.ExpectEvent(t, recordtest.Match{Type: v1.EventTypeNormal, Reason: "Scheduled", Name: name,
			Message: "Successfully assigned shop/" + name, Count: 1})
		recorder.ExpectEvent(t, recordtest.Match{Reason: "Synced", Name: name, Message: "Pod synced (generation 3)", Count: 1})
	}
	// 12 calls: 9 events stored, the 3 repeats folded into one.
	if got := len(recorder.Events()); got != 9 || recorder.Skipped() != 0 {
		t.Errorf("%d events kept, %d skipped; want 9, none", got, recorder.Skipped())
	}
}
