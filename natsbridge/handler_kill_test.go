package natsbridge_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// The environment of a "handler" helper process (see playHandler).
const (
	modeEnv  = "HERALD_NATSBRIDGE_MODE"  // "all" or "next"
	stuckEnv = "HERALD_NATSBRIDGE_STUCK" // the ID whose handler never returns
	slowEnv  = "HERALD_NATSBRIDGE_SLOW"  // "<id> <duration>": that ID's handler takes that long
	seedEnv  = "HERALD_NATSBRIDGE_SEED"  // seeds the handlers' durations
)

var soakRounds = flag.Int("herald.soak", 0, "rounds of TestDurableHandlerKilled (0: the few that CI runs)")

// TestDurableHandlerKilled proves at-least-once at the handler: a durable
// reader process whose handler is in the middle of value k is killed
// (SIGKILL); a standby process takes over, and k comes again to it. Round
// after round (k at random, handlers of random length, read with All and
// with Next):
//   - every published value is handled at least once;
//   - the values handled twice are values the killed reader had started
//     and had not had acknowledged, k among them;
//   - the standby's Redelivered counts every value handled twice, and at
//     most the killed reader's reservation beyond it (what it had
//     reserved, per the position's record, past what it had started).
//
// CI runs four rounds; -herald.soak=N runs N.
func TestDurableHandlerKilled(t *testing.T) {
	t.Parallel() // it waits on processes and takeovers, not on the CPU
	s := startServer(t, embedded.Options{Listen: "127.0.0.1:0"})
	_, js := connect(t, s)
	rounds := 4
	if *soakRounds > 0 {
		rounds = *soakRounds
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for round := range rounds {
		mode := []string{"all", "next"}[round%2]
		const n = 600
		k := 50 + rng.IntN(n-100)
		seed := rng.Uint64()
		t.Run(fmt.Sprintf("%d-%s-k%d", round, mode, k), func(t *testing.T) {
			handlerKilled(t, s, js, fmt.Sprintf("killed.r%d", round), mode, n, k, seed)
		})
	}
}

func handlerKilled(t *testing.T, s *embedded.Server, js jetstream.JetStream, name, mode string, n, k int, seed uint64) {
	topic := newTopic(t, js, name, natsbridge.TopicOptions{})
	ctx := testCtx(t)
	env := []string{topicEnv + "=" + name, modeEnv + "=" + mode, seedEnv + "=" + strconv.FormatUint(seed, 10)}
	first := watchHandler(t, startHelper(t, ctx, "handler", s.URL(), "billing", 0, append(env, stuckEnv+"="+strconv.Itoa(k))...))
	publishAll(t, topic, 1, n)
	eventually(t, fmt.Sprintf("the first reader starts handling %d", k), func() bool { return first.started(k) })
	second := watchHandler(t, startHelper(t, ctx, "handler", s.URL(), "billing", 0, env...))
	// Let the first reader's acks of what it finished reach the server (it
	// acknowledges at least every 100ms), so that k is the first value
	// not acknowledged.
	time.Sleep(300 * time.Millisecond) // the ack interval's passing, not a synchronisation
	rec := durableRecord(t, js, name, "billing")
	killedStarted := first.startedIDs()
	first.kill()
	eventually(t, "the standby handles to the end", func() bool { return second.finished(n) })
	r := second.stop(t)

	handled := map[int]int{}
	for _, id := range killedStarted {
		handled[id]++
	}
	secondStarted := second.startedIDs()
	for _, id := range secondStarted {
		handled[id]++
	}
	var twice []int
	for id := 1; id <= n; id++ {
		switch handled[id] {
		case 0:
			t.Fatalf("value %d was never handled", id)
		case 2:
			twice = append(twice, id)
		}
	}
	if len(secondStarted) == 0 || secondStarted[0] != k {
		t.Errorf("the standby began with %v, want %d, the value whose handler was killed", secondStarted[:min(3, len(secondStarted))], k)
	}
	if !slices.Contains(twice, k) {
		t.Errorf("value %d, killed in its handler, was not handled again", k)
	}
	for _, id := range twice {
		if !slices.Contains(killedStarted, id) || id < k {
			t.Errorf("value %d handled twice: the killed reader had not started it, or had it acknowledged (k = %d)", id, k)
		}
	}
	maxStarted := uint64(slices.Max(killedStarted))
	slack := rec.Handed - min(rec.Handed, maxStarted)
	if r.Redelivered < uint64(len(twice)) || r.Redelivered > uint64(len(twice))+slack {
		t.Errorf("Redelivered = %d, want between %d (values handled twice) and %d (plus the killed reader's reservation beyond what it started: record %+v, started up to %d)",
			r.Redelivered, len(twice), uint64(len(twice))+slack, rec, maxStarted)
	}
	if slack > 4096 {
		t.Errorf("the killed reader reserved %d values beyond what it started, want at most 4096", slack)
	}
	logFault(t, "durable handler killed at %d (%s): %d handled twice, Redelivered %d (reservation slack %d)", k, mode, len(twice), r.Redelivered, slack)
}

// handlerFollower reads a handler helper's lines: "start <id>" as a
// handler begins, "done <id>" as it returns, then its report.
type handlerFollower struct {
	f       *follower
	mu      sync.Mutex // guards starts, doneIDs
	starts  []int
	doneIDs []int
}

func watchHandler(t *testing.T, h *helper) *handlerFollower {
	if line := h.line(t); line != "ready" {
		t.Fatalf("%s said %q, want ready", h.role, line)
	}
	hf := &handlerFollower{f: &follower{h: h, done: make(chan struct{})}}
	go func() {
		defer close(hf.f.done)
		for h.out.Scan() {
			line := h.out.Text()
			var id int
			if _, err := fmt.Sscanf(line, "start %d", &id); err == nil {
				hf.mu.Lock()
				hf.starts = append(hf.starts, id)
				hf.mu.Unlock()
				continue
			}
			if _, err := fmt.Sscanf(line, "done %d", &id); err == nil {
				hf.mu.Lock()
				hf.doneIDs = append(hf.doneIDs, id)
				hf.mu.Unlock()
				continue
			}
			var r report
			if json.Unmarshal([]byte(line), &r) == nil {
				hf.f.mu.Lock()
				hf.f.report = r
				hf.f.mu.Unlock()
			}
		}
	}()
	return hf
}

func (h *handlerFollower) started(id int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.starts, id)
}

func (h *handlerFollower) startedIDs() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.starts)
}

// finished reports whether the helper finished the handler of id.
func (h *handlerFollower) finished(id int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.doneIDs, id)
}

// finishedIDs returns the IDs whose handler the helper finished.
func (h *handlerFollower) finishedIDs() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.doneIDs)
}

// exited reports whether the helper's output ended: it exited.
func (h *handlerFollower) exited() bool {
	select {
	case <-h.f.done:
		return true
	default:
		return false
	}
}

func (h *handlerFollower) kill()                    { h.f.kill() }
func (h *handlerFollower) stop(t *testing.T) report { return h.f.stop(t) }

// playHandler is the "handler" role: it reads the durable position
// nameEnv names with All or Next (modeEnv), printing "start <id>" before
// each value's handler and "done <id>" after it; a handler takes up to
// 3ms (seeded by seedEnv), the handler of the ID stuckEnv names never
// returns, and the one slowEnv names takes the time it gives. When its
// standard input closes, it stops and reports.
func playHandler(ctx context.Context, topic *natsbridge.Topic[Order]) (report, error) {
	var r report
	w, err := topic.Watch(ctx, natsbridge.WatchOptions{Durable: os.Getenv(nameEnv), Takeover: 2 * time.Second})
	if err != nil {
		return r, err
	}
	seed, _ := strconv.ParseUint(os.Getenv(seedEnv), 10, 64)
	rng := rand.New(rand.NewPCG(seed, 1))
	stuck, _ := strconv.Atoi(os.Getenv(stuckEnv))
	var slow int
	var slowFor time.Duration
	if v := os.Getenv(slowEnv); v != "" {
		id, d, _ := strings.Cut(v, " ")
		if slow, err = strconv.Atoi(id); err == nil {
			slowFor, err = time.ParseDuration(d)
		}
		if err != nil {
			return r, fmt.Errorf("%s=%q: %w", slowEnv, v, err)
		}
	}
	handle := func(o Order) {
		fmt.Printf("start %d\n", o.ID)
		if o.ID == stuck {
			select {} // killed here
		}
		if o.ID == slow {
			time.Sleep(slowFor) // the slow handler's work
		}
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond) // the handler's work
		fmt.Printf("done %d\n", o.ID)
	}
	fmt.Println("ready")
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // until the test closes it
		cancel()
		w.Stop() // from outside the loop: it takes effect as the handler returns
	}()
	if os.Getenv(modeEnv) == "all" {
		for o := range w.All() {
			handle(o)
		}
	} else {
		for {
			o, err := w.Next(stop)
			if err != nil {
				break
			}
			handle(o)
		}
	}
	if err := w.Shutdown(ctx); err != nil {
		return r, err
	}
	r.Redelivered = w.Stats().Redelivered
	return r, nil
}
