package natsbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestDurableOneActiveReader: two watchers share a durable position; one
// reads, the other stands by and reads nothing. When the active one stops,
// the standby takes over at once, from the value after the last one the
// first read: together they read the stream once, in order.
func TestDurableOneActiveReader(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js1 := connect(t, s)
	_, js2 := connect(t, s)
	a := newTopic(t, js1, "durable.orders", natsbridge.TopicOptions{})
	b := newTopic(t, js2, "durable.orders", natsbridge.TopicOptions{})
	opts := natsbridge.WatchOptions{Durable: "billing"}
	w1, w2 := watch(t, a, opts), watch(t, b, opts)
	publishAll(t, a, 1, 100)
	first, second, v := firstToRead(t, w1, w2)
	got := append([]int{v.ID}, ids(take(t, first, 59))...)
	first.Done(first.Seq()) // Next's last value is done: the next Next, or Done, says so
	first.Stop()
	got = append(got, ids(take(t, second, 40))...)
	if diff := cmp.Diff(span(1, 100), got); diff != "" {
		t.Fatalf("the two readers read (-want +got):\n%s", diff)
	}
	if second.Stats().Redelivered != 0 {
		t.Errorf("Redelivered() = %d after a clean hand-over, want 0", second.Stats().Redelivered)
	}
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := second.Next(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a value read twice: %v", err)
	}
}

// follower reads a durable helper's lines as they come: each value it
// read, when, and its report.
type follower struct {
	h      *helper
	mu     sync.Mutex // guards reads, first, report
	reads  []int
	first  time.Time // when it read its first value
	report report
	done   chan struct{}
}

func follow(t *testing.T, h *helper) *follower {
	if line := h.line(t); line != "ready" {
		t.Fatalf("%s said %q, want ready", h.role, line)
	}
	f := &follower{h: h, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for h.out.Scan() {
			line := h.out.Text()
			var id int
			var seq uint64
			if _, err := fmt.Sscanf(line, "read %d %d", &id, &seq); err == nil {
				f.mu.Lock()
				if len(f.reads) == 0 {
					f.first = time.Now()
				}
				f.reads = append(f.reads, id)
				f.mu.Unlock()
				continue
			}
			var r report
			if json.Unmarshal([]byte(line), &r) == nil {
				f.mu.Lock()
				f.report = r
				f.mu.Unlock()
			}
		}
	}()
	return f
}

func (f *follower) read() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reads)
}

// stop asks the helper to stop its watcher (a clean Stop), and waits for
// its report.
func (f *follower) stop(t *testing.T) report {
	t.Helper()
	f.h.in.Close()
	<-f.done
	if err := f.h.cmd.Wait(); err != nil {
		t.Fatalf("%s: %v", f.h.role, err)
	}
	return f.report
}

// kill ends the helper with SIGKILL: no Stop, no last ack.
func (f *follower) kill() {
	_ = f.h.cmd.Process.Kill()
	<-f.done
	_ = f.h.cmd.Wait()
}

// TestDurableTakeover runs three processes that share a durable position
// while values are published. The active one is killed (SIGKILL)
// mid-stream: a standby takes over within the takeover time and reads the
// stream from the value after the last one acknowledged, in order;
// Redelivered counts the values the server had delivered to the killed one
// and had no ack for. Then the active one stops cleanly: the third takes
// over at once and reads on from the value after the last one read before
// the Stop, nothing repeated.
func TestDurableTakeover(t *testing.T) {
	t.Parallel() // it waits on servers and faults, not on the CPU
	s := startServer(t, embedded.Options{Listen: "127.0.0.1:0"})
	_, js := connect(t, s)
	const name = "durable.takeover"
	topic := newTopic(t, js, name, natsbridge.TopicOptions{})
	ctx := testCtx(t)
	env := []string{topicEnv + "=" + name, paceEnv + "=1ms"}
	start := func() *follower { return follow(t, startHelper(t, ctx, "durable", s.URL(), "billing", 0, env...)) }
	a, b := start(), start()

	const n = 3000
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	published := make(chan error, 1)
	go func() {
		for i := 1; i <= n; i++ {
			if err := p.Publish(ctx, Order{ID: i}); err != nil {
				published <- err
				return
			}
			if i%100 == 0 {
				time.Sleep(20 * time.Millisecond) // a steady stream rather than one burst: the load, not a synchronisation
			}
		}
		published <- p.Shutdown(ctx)
	}()
	active, standby := a, b
	eventually(t, "a reader is a third through", func() bool { return len(a.read()) >= n/3 || len(b.read()) >= n/3 })
	if len(b.read()) > len(a.read()) {
		active, standby = b, a
	}
	if len(standby.read()) != 0 {
		t.Fatalf("the standby read %d values while the other was active", len(standby.read()))
	}
	cons, err := js.Consumer(ctx, topic.Stream(), "billing")
	if err != nil {
		t.Fatal(err)
	}
	active.kill()
	killed := time.Now()
	// The server's account of the killed reader, once its last ack, sent
	// before the kill, is in.
	var acked, delivered uint64
	eventually(t, "the position settles", func() bool {
		info, err := cons.Info(ctx)
		if err != nil {
			return false
		}
		settled := info.AckFloor.Stream == acked && info.Delivered.Stream == delivered
		acked, delivered = info.AckFloor.Stream, info.Delivered.Stream
		time.Sleep(50 * time.Millisecond) // between two looks at the server
		return settled
	})
	rec := durableRecord(t, js, name, "billing") // as the killed reader left it
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	third := start()
	eventually(t, "a standby read to the end", func() bool {
		for _, f := range []*follower{standby, third} {
			if r := f.read(); len(r) > 0 && r[len(r)-1] == n {
				return true
			}
		}
		return false
	})
	if r := third.read(); len(r) > 0 && r[len(r)-1] == n {
		standby, third = third, standby
	}
	if len(third.read()) != 0 {
		t.Fatalf("two standbys read after the kill: %d and %d values", len(standby.read()), len(third.read()))
	}
	standby.mu.Lock()
	takeover := standby.first.Sub(killed)
	standby.mu.Unlock()
	dead := active.read()
	if !slices.Equal(dead, span(1, len(dead))) || uint64(len(dead)) < acked {
		t.Fatalf("the killed reader read %d values (%v…), acked %d; want 1.. in order, at least what it acked", len(dead), dead[:min(5, len(dead))], acked)
	}
	if diff := cmp.Diff(span(int(acked)+1, n), standby.read()); diff != "" {
		t.Fatalf("after the takeover the standby read (-want: from the value after the last acknowledged, %d +got):\n%s", acked, diff)
	}

	// A clean Stop hands over at once; nothing read is read again.
	p = publisher(t, topic, natsbridge.PublisherOptions{})
	publishN(t, p, n+1, n+500)
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the active reader read on", func() bool { return len(standby.read()) >= n-int(acked)+200 })
	handed := time.Now() // the Stop begins when the process reads the end of its input
	stopped := standby.stop(t)
	before := standby.read()
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := third.read()
		if len(r) > 0 && r[len(r)-1] == n+500 {
			break
		}
		if time.Now().After(deadline) {
			info, err := cons.Info(ctx)
			t.Fatalf("stopped at %d (read %d); third read %d; info %+v %+v pending %d ackpending %d groups %+v err %v", before[len(before)-1], len(before), len(r), info.Delivered, info.AckFloor, info.NumPending, info.NumAckPending, info.PriorityGroups, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	third.mu.Lock()
	handover := third.first.Sub(handed)
	third.mu.Unlock()
	last := before[len(before)-1]
	if diff := cmp.Diff(span(last+1, n+500), third.read()); diff != "" {
		t.Fatalf("after a clean Stop at %d the next reader read (-want +got):\n%s", last, diff)
	}
	r := third.stop(t)
	// Handed out twice: what the killed reader read past its ack. Counted:
	// those, and at most its reservation beyond them (the values fetched
	// ahead past that are not counted).
	twice := uint64(len(dead)) - acked
	slack := rec.Handed - min(rec.Handed, uint64(len(dead)))
	if stopped.Redelivered < twice || stopped.Redelivered > twice+slack {
		t.Errorf("the standby's Redelivered() = %d, want %d..%d (the killed reader read %d, acknowledged %d, reserved up to %d; %d were delivered to it)",
			stopped.Redelivered, twice, twice+slack, len(dead), acked, rec.Handed, delivered)
	}
	if r.Redelivered != 0 {
		t.Errorf("after a clean Stop the next reader's Redelivered() = %d, want 0", r.Redelivered)
	}
	logFault(t, "durable: killed reader read %d, acknowledged %d, reserved to %d, had %d delivered; standby took over %v after the kill (Takeover 2s), %d redelivered (%d read twice); clean hand-over in %v",
		len(dead), acked, rec.Handed, delivered, takeover.Round(time.Millisecond), stopped.Redelivered, twice, handover.Round(time.Millisecond))
}

// TestDurableStopRacesShutdown: Stop and Topic.Shutdown race on a
// durable watcher that has read part of the stream; the next reader of
// the position starts right after the last value read.
func TestDurableStopRacesShutdown(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	const n = 100
	seed := newTopic(t, js, "h2dur", natsbridge.TopicOptions{})
	publishAll(t, seed, 1, n)
	last := 0
	for iter := range 6 {
		topic, err := natsbridge.NewTopic(testCtx(t), js, "h2dur", natsbridge.JSON[Order](), natsbridge.TopicOptions{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		w, err := topic.Watch(testCtx(t), natsbridge.WatchOptions{Durable: "pos", From: 1})
		if err != nil {
			t.Fatal(err)
		}
		got := take(t, w, 5)
		if got[0].ID != last+1 {
			t.Fatalf("iter %d: durable reader starts at %d, want %d (after %d)", iter, got[0].ID, last+1, last)
		}
		last = got[len(got)-1].ID
		var wg sync.WaitGroup
		wg.Go(w.Stop)
		wg.Go(func() {
			if err := topic.Shutdown(testCtx(t)); err != nil {
				t.Errorf("iter %d: Shutdown: %v", iter, err)
			}
		})
		wg.Wait()
		if r := w.Stats().Redelivered; r != 0 {
			t.Errorf("iter %d: Redelivered %d", iter, r)
		}
	}
}
