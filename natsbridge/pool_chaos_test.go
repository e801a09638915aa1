package natsbridge_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/handle"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

var chaosRounds = flag.Int("herald.chaos", 8, "TestPoolKilledAtRandomMoments: how many reader processes it ends")

// TestPoolKilledAtRandomMoments: two processes read one durable position
// with a handle.Pool (4 workers, 7 keys, handlers that take a few
// milliseconds and fail now and then, retried after a short wait) while
// values are published. Again and again, one of them is ended at a random
// moment: killed (SIGKILL) mid-stream, or asked to stop and killed a
// random few milliseconds later (inside its Shutdown: between its last
// acknowledgement and its hand-over), and a new one starts. At least once
// holds: every value is handled to its end by some process, or
// dead-lettered; and each process begins each key's values in order.
func TestPoolKilledAtRandomMoments(t *testing.T) {
	t.Parallel() // it waits on processes and takeovers, not on the CPU
	s := startServer(t, embedded.Options{Listen: "127.0.0.1:0"})
	_, js := connect(t, s)
	const name, n = "pool.chaos", 1500
	topic := newTopic(t, js, name, natsbridge.TopicOptions{})
	dlq := newTopicOf(t, js, name+".dead", natsbridge.JSON[natsbridge.DeadLetter](), natsbridge.TopicOptions{})
	ctx := testCtx(t)
	start := func() *handlerFollower {
		return watchHandler(t, startHelper(t, ctx, "chaos", s.URL(), "ship", 0, topicEnv+"="+name))
	}
	var all []*handlerFollower
	live := []*handlerFollower{start(), start()}
	all = append(all, live...)
	published := make(chan struct{})
	go func() {
		defer close(published)
		p, err := topic.Publisher(natsbridge.PublisherOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		for i := 1; i <= n; i++ {
			if err := p.Publish(ctx, Order{ID: i}); err != nil {
				t.Error(err)
				return
			}
			if i%10 == 0 {
				time.Sleep(time.Duration(*chaosRounds) * 6 * time.Millisecond) // a steady stream through the rounds, not a synchronisation
			}
		}
		if err := p.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	}()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	kills, stops := 0, 0
	for round := range *chaosRounds {
		time.Sleep(time.Duration(300+rng.IntN(1500)) * time.Millisecond) // a random moment, not a synchronisation
		// Mostly the active reader: the one that began the latest value.
		i := rng.IntN(len(live))
		if rng.IntN(4) > 0 {
			latest := 0
			for j, h := range live {
				if ids := h.startedIDs(); len(ids) > 0 && slices.Max(ids) > latest {
					i, latest = j, slices.Max(ids)
				}
			}
		}
		h := live[i]
		if round%2 == 0 {
			h.kill()
			kills++
		} else {
			_ = h.f.h.in.Close() // Stop: the Pool's Shutdown, the hand-over
			time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
			h.kill()
			stops++
		}
		live[i] = start()
		all = append(all, live[i])
	}
	<-published
	dead := func() []uint64 {
		var seqs []uint64
		info, err := js.Stream(ctx, dlq.Stream())
		if err != nil || info.CachedInfo().State.Msgs == 0 {
			return nil
		}
		w, err := dlq.Watch(ctx, natsbridge.WatchOptions{From: 1})
		if err != nil {
			return nil
		}
		defer w.Stop()
		if w.Flush(ctx) != nil {
			return nil
		}
		w.Stop()
		for d := range w.All() {
			seqs = append(seqs, d.Seq)
		}
		return seqs
	}
	missing := func() []int {
		fated := map[int]bool{}
		for _, h := range all {
			for _, id := range h.finishedIDs() {
				fated[id] = true
			}
		}
		for _, seq := range dead() {
			fated[int(seq)] = true // a fresh topic: value i is at sequence i
		}
		var out []int
		for id := 1; id <= n; id++ {
			if !fated[id] {
				out = append(out, id)
			}
		}
		return out
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(missing()) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if m := missing(); len(m) > 0 {
		t.Errorf("%d values never handled to their end nor dead-lettered: %v", len(m), m[:min(len(m), 20)])
	}
	for _, h := range live {
		h.stop(t)
	}
	twice := 0
	handled := map[int]int{}
	for i, h := range all {
		checkKeyOrder(t, fmt.Sprintf("process %d", i), h.startedIDs())
		for _, id := range h.finishedIDs() {
			handled[id]++
		}
	}
	for _, c := range handled {
		if c > 1 {
			twice++
		}
	}
	logFault(t, "pool chaos: %d kills, %d stops killed in their hand-over, %d values handled twice, %d dead-lettered", kills, stops, twice, len(dead()))
}

// playChaos is the "chaos" role: playPool's Pool without its stuck,
// failing and crashing values: each handler takes 0-3ms, and one first
// attempt in 13 fails and is retried 20-50ms later.
func playChaos(ctx context.Context, js jetstream.JetStream, topic *natsbridge.Topic[Order]) (report, error) {
	var r report
	w, dlq, err := watchForPool(ctx, js, topic)
	if err != nil {
		return r, err
	}
	defer dlq.Shutdown(ctx)
	var mu sync.Mutex
	failed := map[int]bool{}
	var out sync.Mutex // one line at a time
	say := func(format string, id int) {
		out.Lock()
		fmt.Printf(format, id)
		out.Unlock()
	}
	p := handle.New(w, poolKey, func(ctx context.Context, o Order) error {
		say("start %d\n", o.ID)
		if o.ID%13 == 0 {
			mu.Lock()
			first := !failed[o.ID]
			failed[o.ID] = true
			mu.Unlock()
			if first {
				return errors.New("the first attempt fails")
			}
		}
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond) // the handler's work
		say("done %d\n", o.ID)
		return nil
	}, handle.Options{Workers: 4, MaxAttempts: 20, RetryMin: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond, Logger: quiet})
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin) // until the test closes it
	if err := p.Shutdown(ctx); err != nil {
		return r, err
	}
	r.Redelivered = w.Stats().Redelivered
	return r, nil
}
