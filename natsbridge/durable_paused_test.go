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

// TestPoolPausedReaderBeginsNothingItNoLongerHolds: a process handling a
// durable topic with a handle.Pool, its values waiting behind their keys
// (handlers of 20ms, one stuck), is stopped (SIGSTOP) past its lease while
// a standby takes the position over, and continued (SIGCONT): its Pool
// begins none of the values it held, which the standby handles (each
// counted in its Redelivered); only the handler that was running goes on.
// Before the Pool asked its source whether its reader still held a value,
// it began 15 to 22 of them within 25ms of the SIGCONT.
func TestPoolPausedReaderBeginsNothingItNoLongerHolds(t *testing.T) {
	t.Parallel() // it waits on processes and takeovers, not on the CPU
	s := startServer(t, embedded.Options{Listen: "127.0.0.1:0"})
	_, js := connect(t, s)
	const name, n, stuck = "pool.paused", 300, 30
	topic := newTopic(t, js, name, natsbridge.TopicOptions{})
	newTopicOf(t, js, name+".dead", natsbridge.JSON[natsbridge.DeadLetter](), natsbridge.TopicOptions{})
	ctx := testCtx(t)
	first := watchHandler(t, startHelper(t, ctx, "pool", s.URL(), "ship", 0, topicEnv+"="+name, stuckEnv+"=30", workEnv+"=20ms"))
	publishAll(t, topic, 1, n)
	eventually(t, "the first reader in the stuck handler, values waiting", func() bool { return first.started(stuck) && len(first.startedIDs()) > 40 })
	second := watchHandler(t, startHelper(t, ctx, "pool", s.URL(), "ship", 0, topicEnv+"="+name, workEnv+"=20ms"))
	proc := first.f.h.cmd.Process
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	eventually(t, "the standby takes the position over", func() bool { return len(second.startedIDs()) > 0 })
	time.Sleep(time.Until(stopped.Add(4 * time.Second))) // twice the takeover time: the lease is long over
	before := len(first.startedIDs())
	if err := proc.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the standby handles to the end", func() bool { return second.finished(n) })
	after := first.startedIDs()[before:]
	if len(after) > 0 {
		t.Errorf("the continued reader began %d values it held after the takeover: %v", len(after), after)
	}
	firstStarted := first.startedIDs()
	first.kill() // its stuck handler would hold a Shutdown
	r := second.stop(t)
	done := slices.Concat(first.finishedIDs(), second.finishedIDs())
	twice := 0
	for id := 1; id <= n; id++ {
		if !slices.Contains(done, id) {
			t.Errorf("value %d never handled", id)
		}
	}
	for _, id := range second.startedIDs() {
		if slices.Contains(firstStarted, id) {
			twice++
		}
	}
	if r.Redelivered < uint64(twice) {
		t.Errorf("Redelivered %d, fewer than the %d values both readers began", r.Redelivered, twice)
	}
	checkKeyOrder(t, "standby", second.startedIDs())
	logFault(t, "pool paused past its lease: %d begun by both (Redelivered %d); the continued reader began %d after SIGCONT", twice, r.Redelivered, len(after))
}
