package natsbridge_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/handle"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// The environment of a "pool" helper process (see playPool), besides
// stuckEnv: the ID whose handler never returns.
const (
	failEnv  = "HERALD_NATSBRIDGE_FAIL"  // an ID whose first attempt fails; its retry waits 10s
	crashEnv = "HERALD_NATSBRIDGE_CRASH" // an ID whose handler ends the process (os.Exit(3))
	workEnv  = "HERALD_NATSBRIDGE_WORK"  // how long a handler works (a Go duration; 1ms if unset)
)

// poolKeys is how many keys the pool helpers' values spread over.
const poolKeys = 7

func poolKey(o Order) string { return "k" + strconv.Itoa(o.ID%poolKeys) }

// TestPoolKilledMidHandlerAndBackoff: a process handles a durable topic
// with a handle.Pool (4 workers, 7 keys) and is killed (SIGKILL) while one
// value is in a handler and another waits out its retry. A standby process
// takes over: every value is handled, each key's values in order within
// each process, the values handled twice are values the killed process
// had begun and not had acknowledged, and the standby's Redelivered
// counts each of them (and at most the killed reader's reservation more).
func TestPoolKilledMidHandlerAndBackoff(t *testing.T) {
	t.Parallel() // it waits on processes and takeovers, not on the CPU
	s := startServer(t, embedded.Options{Listen: "127.0.0.1:0"})
	_, js := connect(t, s)
	const name, n = "pool.killed", 400
	topic := newTopic(t, js, name, natsbridge.TopicOptions{})
	newTopicOf(t, js, name+".dead", natsbridge.JSON[natsbridge.DeadLetter](), natsbridge.TopicOptions{})
	ctx := testCtx(t)
	env := []string{topicEnv + "=" + name, stuckEnv + "=250", failEnv + "=240"}
	first := watchHandler(t, startHelper(t, ctx, "pool", s.URL(), "ship", 0, env...))
	publishAll(t, topic, 1, n)
	eventually(t, "one value in its handler, one waiting out its retry", func() bool { return first.started(250) && first.started(240) })
	second := watchHandler(t, startHelper(t, ctx, "pool", s.URL(), "ship", 0, topicEnv+"="+name))
	time.Sleep(300 * time.Millisecond) // the ack interval's passing, not a synchronisation
	rec := durableRecord(t, js, name, "ship")
	killedStarted := first.startedIDs()
	killedDone := first.finishedIDs()
	first.kill()
	eventually(t, "the standby handles the rest", func() bool {
		done := append(killedDone, second.finishedIDs()...)
		for id := 1; id <= n; id++ {
			if !slices.Contains(done, id) {
				return false
			}
		}
		return true
	})
	r := second.stop(t)
	checkKeyOrder(t, "killed", killedStarted)
	checkKeyOrder(t, "standby", second.startedIDs())
	twice := 0
	for _, id := range second.startedIDs() {
		if slices.Contains(killedStarted, id) {
			twice++
			if slices.Contains(killedDone, id) && id < 240 {
				// done, and acknowledged unless it was in the last batch
			}
		} else if slices.Contains(killedDone, id) {
			t.Errorf("value %d handled again though the killed process had not begun it", id)
		}
	}
	for _, id := range []int{240, 250} {
		if !slices.Contains(second.startedIDs(), id) {
			t.Errorf("value %d (in a handler, or waiting out a retry, when killed) was not handled again", id)
		}
	}
	slack := rec.Handed - min(rec.Handed, uint64(slices.Max(killedStarted)))
	if r.Redelivered < uint64(twice) || r.Redelivered > uint64(twice)+slack {
		t.Errorf("Redelivered %d, want %d..%d (values handled twice, plus the killed reader's reservation beyond them)", r.Redelivered, twice, uint64(twice)+slack)
	}
	logFault(t, "pool killed mid-handler and mid-backoff: %d handled twice, Redelivered %d (slack %d)", twice, r.Redelivered, slack)
}

// TestPoolCrashingValueDeadLettered: a value whose handler ends its
// process (an out-of-memory kill, an os.Exit) comes again to the next
// process each time; the attempts count across processes, from the
// position's record (the readers that died with it unfinished), and once
// it was handled MaxAttempts (3) times it is dead-lettered, in the
// topic's dead-letter topic, and the values after it are handled: no
// crash loop.
func TestPoolCrashingValueDeadLettered(t *testing.T) {
	t.Parallel() // it waits on processes and takeovers, not on the CPU
	s := startServer(t, embedded.Options{Listen: "127.0.0.1:0"})
	_, js := connect(t, s)
	const name, n = "pool.crash", 50
	topic := newTopic(t, js, name, natsbridge.TopicOptions{})
	dlq := newTopicOf(t, js, name+".dead", natsbridge.JSON[natsbridge.DeadLetter](), natsbridge.TopicOptions{})
	ctx := testCtx(t)
	env := []string{topicEnv + "=" + name, crashEnv + "=20"}
	crashes := 0
	for {
		h := watchHandler(t, startHelper(t, ctx, "pool", s.URL(), "ship", 0, env...))
		if crashes == 0 {
			publishAll(t, topic, 1, n) // the position is made by the first process: what follows
		}
		deadLettered := func() bool {
			info, err := js.Stream(ctx, dlq.Stream())
			return err == nil && info.CachedInfo().State.Msgs > 0
		}
		eventually(t, "the process crashed, or value 20 is dead-lettered", func() bool { return h.exited() || deadLettered() })
		if !h.exited() {
			eventually(t, "the values after it handled", func() bool { return h.finished(n) })
			h.stop(t)
			break
		}
		_ = h.f.h.cmd.Wait()
		if code := h.f.h.cmd.ProcessState.ExitCode(); code != 3 {
			t.Fatalf("the process exited with %d, want 3 (its handler of value 20)", code)
		}
		crashes++
		if crashes > 5 {
			t.Fatal("still crashing after 5 processes: the value was not dead-lettered")
		}
	}
	// The deaths count once the position stands right before value 20:
	// one or two crashes may come first, while it moves up to it.
	if crashes < 3 || crashes > 5 {
		t.Errorf("%d processes crashed on value 20, want 3 (MaxAttempts) to 5", crashes)
	}
	dw := watchTopic(t, dlq, natsbridge.WatchOptions{From: 1})
	d, err := dw.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Seq != 20 || d.Attempts != 3 || !strings.Contains(d.Error, "MaxAttempts") || len(d.Data) == 0 {
		t.Errorf("dead letter %+v, want value 20 after 3 attempts", d)
	}
}

// checkKeyOrder fails if the IDs a process began, in the order it began
// them, are out of order within a key (a retry begins a value again, after
// its first attempt and before the next value of its key).
func checkKeyOrder(t *testing.T, who string, started []int) {
	t.Helper()
	last := map[string]int{}
	for _, id := range started {
		k := poolKey(Order{ID: id})
		if id < last[k] {
			t.Errorf("%s: value %d of key %s began after %d", who, id, k, last[k])
			return
		}
		last[k] = id
	}
}

// playPool is the "pool" role: a handle.Pool of 4 workers on the durable
// position nameEnv names, keyed by poolKey, its dead letters in the
// topic's ".dead" topic. It prints "start <id>" as a handler begins and
// "done <id>" as it returns. The handler of stuckEnv's ID never returns;
// the first attempt of failEnv's ID fails, and its retry waits 10s; the
// handler of crashEnv's ID ends the process. When its standard input
// closes, it shuts the Pool down and reports.
func playPool(ctx context.Context, js jetstream.JetStream, topic *natsbridge.Topic[Order]) (report, error) {
	var r report
	w, dlq, err := watchForPool(ctx, js, topic)
	if err != nil {
		return r, err
	}
	defer dlq.Shutdown(ctx)
	stuck, _ := strconv.Atoi(os.Getenv(stuckEnv))
	fail, _ := strconv.Atoi(os.Getenv(failEnv))
	crash, _ := strconv.Atoi(os.Getenv(crashEnv))
	work, err := time.ParseDuration(os.Getenv(workEnv))
	if err != nil {
		work = time.Millisecond
	}
	var mu sync.Mutex
	failed := map[int]bool{}
	p := handle.New(w, poolKey, func(ctx context.Context, o Order) error {
		fmt.Printf("start %d\n", o.ID)
		switch o.ID {
		case stuck:
			select {} // killed here
		case crash:
			os.Exit(3) // the process dies in the handler, every time
		case fail:
			mu.Lock()
			first := !failed[o.ID]
			failed[o.ID] = true
			mu.Unlock()
			if first {
				return errors.New("the first attempt fails")
			}
		}
		time.Sleep(work) // the handler's work
		fmt.Printf("done %d\n", o.ID)
		return nil
	}, handle.Options{Workers: 4, MaxAttempts: 3, RetryMin: 10 * time.Second, RetryMax: 10 * time.Second})
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin) // until the test closes it
	if err := p.Shutdown(ctx); err != nil {
		return r, err
	}
	r.Redelivered = w.Stats().Redelivered
	return r, nil
}

// watchForPool watches the durable position nameEnv names, with a takeover
// time of 2s and its dead letters in the topic's ".dead" topic, which it
// returns too: shut it down after the watcher's Pool.
func watchForPool(ctx context.Context, js jetstream.JetStream, topic *natsbridge.Topic[Order]) (*natsbridge.Watcher[Order], *natsbridge.Topic[natsbridge.DeadLetter], error) {
	dlq, err := natsbridge.NewTopic(ctx, js, topic.Name()+".dead", natsbridge.JSON[natsbridge.DeadLetter](), natsbridge.TopicOptions{})
	if err != nil {
		return nil, nil, err
	}
	w, err := topic.Watch(ctx, natsbridge.WatchOptions{Durable: os.Getenv(nameEnv), Takeover: 2 * time.Second, DeadLetters: dlq})
	if err != nil {
		_ = dlq.Shutdown(ctx)
		return nil, nil, err
	}
	return w, dlq, nil
}
