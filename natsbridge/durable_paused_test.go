//go:build unix

package natsbridge_test

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestDurablePausedReaderHandsOutNothingAfterTakeover: a reader's process
// stopped (SIGSTOP) in a handler past its lease, while a standby takes the
// position over, and continued (SIGCONT) once that handler's time is up:
// it hands out no value more. It is fenced at its next hand-out, which
// comes at once, not at its keeper's next check, which comes after (a
// hand-out between the two would be a value in two readers' hands at one
// moment). Every value is handled; the one in the stopped handler twice,
// and counted in the standby's Redelivered.
func TestDurablePausedReaderHandsOutNothingAfterTakeover(t *testing.T) {
	t.Parallel() // it waits on processes and takeovers, not on the CPU
	s := startServer(t, embedded.Options{Listen: "127.0.0.1:0"})
	_, js := connect(t, s)
	const name, n, k = "paused", 600, 100
	const slowFor, stopFor = 3 * time.Second, 4 * time.Second // the stop outlasts the handler
	topic := newTopic(t, js, name, natsbridge.TopicOptions{})
	ctx := testCtx(t)
	env := []string{topicEnv + "=" + name, modeEnv + "=all", seedEnv + "=1"}
	first := watchHandler(t, startHelper(t, ctx, "handler", s.URL(), "billing", 0,
		append(env, fmt.Sprintf("%s=%d %v", slowEnv, k, slowFor))...))
	publishAll(t, topic, 1, n)
	eventually(t, fmt.Sprintf("the first reader starts handling %d", k), func() bool { return first.started(k) })
	second := watchHandler(t, startHelper(t, ctx, "handler", s.URL(), "billing", 0, env...))
	proc := first.f.h.cmd.Process
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	eventually(t, "the standby takes the position over", func() bool { return second.started(k) })
	tookOver := time.Since(stopped)
	time.Sleep(time.Until(stopped.Add(stopFor))) // the stop's length: the handler's time is up when it goes on
	before := first.startedIDs()
	if err := proc.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	eventually(t, fmt.Sprintf("the continued reader's handler of %d returns", k), func() bool { return first.finished(k) })
	eventually(t, "the standby handles to the end", func() bool { return second.finished(n) })
	if after := first.startedIDs()[len(before):]; len(after) > 0 {
		t.Errorf("the reader continued after the takeover handed out %v: values in two readers' hands at once", after)
	}
	r1, r2 := first.stop(t), second.stop(t)
	handled := map[int]int{}
	for _, id := range slices.Concat(first.startedIDs(), second.startedIDs()) {
		handled[id]++
	}
	for id := 1; id <= n; id++ {
		if handled[id] == 0 {
			t.Fatalf("value %d was never handled", id)
		}
	}
	twice := 0
	for _, c := range handled {
		twice += c - 1
	}
	if uint64(twice) > r1.Redelivered+r2.Redelivered || handled[k] != 2 {
		t.Errorf("%d values handled twice (value %d %d times), Redelivered %d + %d", twice, k, handled[k], r1.Redelivered, r2.Redelivered)
	}
	logFault(t, "reader stopped %v in a handler: standby took over %v after the stop; %d handled twice, Redelivered %d", stopFor, tookOver.Round(time.Millisecond), twice, r2.Redelivered)
}
