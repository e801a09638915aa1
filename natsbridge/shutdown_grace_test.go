package natsbridge_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestShutdownCancelledCtxRacesStopAndDone: a durable watcher's Shutdown
// with a ctx already ended, run at once with Stop and Done, returns within
// the hand-over grace, and the values not done come again to the next
// reader, counted in Redelivered: at once when the hand-over's calls fit
// in the grace, after the takeover time at the latest when they do not
// (a loaded machine: the grace is 250ms for every call).
func TestShutdownCancelledCtxRacesStopAndDone(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "grace.shutdown", natsbridge.TopicOptions{})
	ctx := testCtx(t)
	const takeover = 2 * time.Second
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: takeover})
	publishAll(t, topic, 1, 10)
	var got []uint64
	for range 4 {
		d, err := w.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d.Seq)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	var wg sync.WaitGroup
	start := time.Now()
	var elapsed time.Duration
	var serr error
	wg.Add(3)
	go func() { defer wg.Done(); serr = w.Shutdown(done); elapsed = time.Since(start) }()
	go func() { defer wg.Done(); w.Stop() }()
	go func() { defer wg.Done(); w.Done(got[0]); w.Done(got[1]) }()
	wg.Wait()
	if !errors.Is(serr, context.Canceled) {
		t.Errorf("Shutdown(cancelled) = %v; want context.Canceled", serr)
	}
	if elapsed > 750*time.Millisecond {
		t.Errorf("Shutdown with a cancelled ctx took %v; want within the hand-over grace", elapsed)
	}
	w2 := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: takeover})
	seen := map[uint64]bool{got[0]: true, got[1]: true} // done: they need not come again
	for len(seen) < 10 {
		short, c := context.WithTimeout(ctx, takeover+5*time.Second)
		d, err := w2.Receive(short)
		c()
		if err != nil {
			t.Fatalf("next reader stalled with %d of 10 values seen or done (%v): values lost; stats %+v", len(seen), err, w2.Stats())
		}
		seen[d.Seq] = true
		w2.Done(d.Seq)
	}
	if st := w2.Stats(); st.Redelivered == 0 {
		t.Errorf("next reader's Redelivered = 0; want the values not done (%v handed, 2 done) counted: %+v", got, st)
	}
}

// TestShutdownCtxEndsMidHandOver: a durable watcher's Shutdown whose ctx
// ends while it waits for an outstanding value returns within the grace.
func TestShutdownCtxEndsMidHandOver(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "grace.mid", natsbridge.TopicOptions{})
	ctx := testCtx(t)
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 10 * time.Second})
	publishAll(t, topic, 1, 3)
	if _, err := w.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	short, c := context.WithTimeout(ctx, 100*time.Millisecond)
	defer c()
	start := time.Now()
	err := w.Shutdown(short)
	if el := time.Since(start); el > 100*time.Millisecond+600*time.Millisecond {
		t.Errorf("Shutdown took %v with a 100ms ctx", el)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v; want DeadlineExceeded", err)
	}
	if err := topic.Shutdown(ctx); err != nil {
		t.Errorf("Topic.Shutdown after = %v", err)
	}
}

// TestMemberReceiveWhileOtherJoinsAndLeaves: a member reads across
// partitions while another joins and leaves again and again: no value is
// handed out twice while outstanding, and nothing stalls.
func TestMemberReceiveWhileOtherJoinsAndLeaves(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := testCtx(t)
	pt := newPartitioned(t, js, "grace.churn", 4)
	m, err := pt.Join(ctx, "g", natsbridge.GroupOptions{Member: "a", Takeover: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	pub, err := pt.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := range n {
		if err := pub.Publish(ctx, Order{ID: i, Item: "k" + string(rune('a'+i%26))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	outstanding := map[int]bool{}
	doneIDs := map[int]bool{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			b, err := pt.Join(ctx, "g", natsbridge.GroupOptions{Member: "b", Takeover: 2 * time.Second})
			if err != nil {
				t.Error(err)
				return
			}
			sc, c := context.WithTimeout(ctx, 300*time.Millisecond)
			for {
				d, err := b.Receive(sc)
				if err != nil {
					break
				}
				mu.Lock()
				if outstanding[d.Value.ID] {
					t.Errorf("value %d handed to b while outstanding at a", d.Value.ID)
				}
				doneIDs[d.Value.ID] = true
				mu.Unlock()
				b.Done(d.Seq)
			}
			c()
			sd, c2 := context.WithTimeout(ctx, 2*time.Second)
			if err := b.Shutdown(sd); err != nil {
				t.Errorf("b.Shutdown = %v", err)
			}
			c2()
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		all := len(doneIDs) >= n
		mu.Unlock()
		if all || time.Now().After(deadline) {
			break
		}
		sc, c := context.WithTimeout(ctx, 500*time.Millisecond)
		d, err := m.Receive(sc)
		c()
		if err != nil {
			continue
		}
		mu.Lock()
		if outstanding[d.Value.ID] {
			t.Errorf("value %d handed to a twice at once", d.Value.ID)
		}
		outstanding[d.Value.ID] = true
		mu.Unlock()
		mu.Lock()
		delete(outstanding, d.Value.ID)
		doneIDs[d.Value.ID] = true
		mu.Unlock()
		m.Done(d.Seq)
	}
	close(stop)
	wg.Wait()
	if len(doneIDs) < n {
		t.Errorf("only %d of %d values done in 30s under churn: stall or loss; a stats %+v", len(doneIDs), n, m.Stats())
	}
}
