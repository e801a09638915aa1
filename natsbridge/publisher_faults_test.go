package natsbridge_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
	"github.com/heraldgo/herald/natsbridge/natstest"
)

// TestPublishWaitingWhenConnClosed: Publish waits for room in a full
// window (the relay holds every ack back); the connection is closed while
// it waits. Publish's doc: it returns an error wrapping
// nats.ErrConnectionClosed once the connection is closed. The value must
// not be accepted (or, if accepted, it must be counted, not left Pending).
func TestPublishWaitingWhenConnClosed(t *testing.T) {
	s := natstest.StartServer(t, natstest.Options{})
	relay := natstest.NewRelay(t, s.URL())
	nc, js := dial(t, relay.URL())
	topic := newTopic(t, js, "edge.closed", natsbridge.TopicOptions{})
	p := publisher(t, topic, natsbridge.PublisherOptions{Window: 2, AckTimeout: time.Hour})
	publishN(t, p, 1, 1)
	eventually(t, "the first value confirmed", func() bool { return p.Stats().Confirmed == 1 })
	relay.Hold()
	defer relay.Release()
	publishN(t, p, 2, 3) // the window is full
	result := make(chan error, 1)
	go func() { result <- p.Publish(testCtx(t), Order{ID: 4}) }()
	eventually(t, "Publish waits for room", func() bool {
		return parkedIn("(*Publisher[...]).Publish(")
	})
	nc.Close()
	var err error
	select {
	case err = <-result:
	case <-time.After(10 * time.Second):
		t.Fatal("Publish still waiting 10s after the connection closed")
	}
	time.Sleep(2 * time.Second) // the publisher's loop settling what it holds
	st := p.Stats()
	t.Logf("Publish = %v; 2s later: %s", err, describe(st))
	if !errors.Is(err, nats.ErrConnectionClosed) {
		t.Errorf("Publish waiting when the connection closed returned %v, want an error wrapping nats.ErrConnectionClosed", err)
	}
	if st.Pending != 0 {
		t.Errorf("2s after the connection closed: %s; want nothing pending (no ack can come)", describe(st))
	}
	_ = p.Shutdown(testCtx(t))
	t.Logf("after Shutdown: %s", describe(p.Stats()))
}

// TestPublisherShutdownCancelledWhileHeld: values in flight, their acks held
// back by the relay; Shutdown with a context already ended gives up at
// once and counts everything; a later Shutdown says ErrUnconfirmed; the
// stream holds each value at most once, in order.
func TestPublisherShutdownCancelledWhileHeld(t *testing.T) {
	s := natstest.StartServer(t, natstest.Options{})
	relay := natstest.NewRelay(t, s.URL())
	_, js := dial(t, relay.URL())
	_, adminJS := dial(t, s.URL())
	topic := newTopic(t, js, "edge.cancelled", natsbridge.TopicOptions{})
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	publishN(t, p, 1, 500)
	relay.Hold()
	publishN(t, p, 501, 1000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	err := p.Shutdown(ctx)
	took := time.Since(start)
	st := p.Stats()
	relay.Release()
	t.Logf("Shutdown(cancelled) = %v after %v: %s", err, took, describe(st))
	if !errors.Is(err, context.Canceled) || took > time.Second {
		t.Errorf("Shutdown with an ended context = %v after %v, want context.Canceled at once", err, took)
	}
	if st.Pending != 0 || st.Published != st.Confirmed+st.Failed+st.Unconfirmed {
		t.Errorf("after Shutdown: %s; want every value counted", describe(st))
	}
	if err := p.Shutdown(testCtx(t)); !errors.Is(err, natsbridge.ErrUnconfirmed) && st.Unconfirmed > 0 {
		t.Errorf("a later Shutdown = %v, want ErrUnconfirmed", err)
	}
	time.Sleep(500 * time.Millisecond) // what was held reaching the server
	stored := storedIDs(t, adminJS, topic)
	if !slices.Equal(stored, span(1, len(stored))) || uint64(len(stored)) < st.Confirmed {
		t.Errorf("the stream holds %d values (%s), confirmed %d", len(stored), firstDiff(stored, span(1, len(stored))), st.Confirmed)
	}
}

// TestPublishStreamDeletedMidStream deletes the stream while a publisher
// publishes as fast as it can: the doc says each value sent to a deleted
// stream is Failed as soon as the server says the stream is gone. Shutdown
// must return promptly with every value Confirmed or Failed.
func TestPublishStreamDeletedMidStream(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "edge.deleted", natsbridge.TopicOptions{})
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	const n = 20000
	done := make(chan error, 1)
	go func() {
		for i := 1; i <= n; i++ {
			if err := p.Publish(testCtx(t), Order{ID: i}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	eventually(t, "a quarter confirmed", func() bool { return p.Stats().Confirmed >= n/4 })
	if err := js.DeleteStream(testCtx(t), topic.Stream()); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	if err := <-done; err != nil {
		t.Fatalf("Publish: %v", err)
	}
	err := p.Shutdown(boundedCtx(t, 10*time.Second))
	st := p.Stats()
	t.Logf("Shutdown = %v %v after the deletion: %s, retries %d", err, time.Since(deleted).Round(time.Millisecond), describe(st), st.Retries)
	if err != nil || st.Pending != 0 || st.Unconfirmed != 0 || st.Confirmed+st.Failed != n {
		t.Errorf("after the stream's deletion: Shutdown = %v, %s; want every value confirmed or failed", err, describe(st))
	}
}

// TestPublishManyGoroutinesWindowOne: eight goroutines publish through one
// publisher whose window is 1 (every value a batch of its own), and
// another eight through one with MaxWindow: each goroutine's values must
// be stored once, in that goroutine's order (the order of its calls).
func TestPublishManyGoroutinesWindow(t *testing.T) {
	for _, window := range []int{1, natsbridge.MaxWindow} {
		t.Run(fmt.Sprintf("window=%d", window), func(t *testing.T) {
			s := startServer(t, embedded.Options{})
			_, js := connect(t, s)
			topic := newTopic(t, js, "edge.goroutines", natsbridge.TopicOptions{})
			p := publisher(t, topic, natsbridge.PublisherOptions{Window: window})
			const gs = 8
			each := 300
			if window > 1 {
				each = 3000
			}
			var wg sync.WaitGroup
			for g := range gs {
				wg.Go(func() {
					for i := 1; i <= each; i++ {
						if err := p.Publish(context.Background(), Order{ID: i, Item: fmt.Sprint("g", g)}); err != nil {
							t.Errorf("Publish: %v", err)
							return
						}
					}
				})
			}
			wg.Wait()
			if err := p.Shutdown(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			st := p.Stats()
			if st.Confirmed != uint64(gs*each) || st.Retries != 0 {
				t.Errorf("Stats() = %s, retries %d; want all confirmed, none sent again", describe(st), st.Retries)
			}
			stored := streamOrderOrders(t, js, topic.Stream())
			per := map[string][]int{}
			for _, o := range stored {
				per[o.Item] = append(per[o.Item], o.ID)
			}
			for g := range gs {
				if got := per[fmt.Sprint("g", g)]; !slices.Equal(got, span(1, each)) {
					t.Errorf("goroutine %d: the stream holds %d of its values, not in order once each: %s", g, len(got), firstDiff(got, span(1, each)))
				}
			}
		})
	}
}

// TestPublishServerKilledTwice kills the single server twice in quick succession
// (killed, restarted, killed again at once, restarted) three times while a
// publisher publishes in bursts with pauses longer than its linger (so
// that kills fall on batch commits as well as on open batches). Every
// value must be confirmed and stored once in order; the wire carries no
// send the publisher did not count.
func TestPublishServerKilledTwice(t *testing.T) {
	t.Parallel() // it waits on servers and faults, not on the CPU
	s := natstest.StartServer(t, natstest.Options{})
	relay := natstest.NewRelay(t, s.URL())
	_, pubJS := dial(t, relay.URL())
	_, subJS := dial(t, s.URL())
	topic := newTopic(t, pubJS, "edge.doublekill", natsbridge.TopicOptions{})
	p := publisher(t, topic, natsbridge.PublisherOptions{AckTimeout: 500 * time.Millisecond})
	const n = 15000
	published := make(chan error, 1)
	go func() {
		ctx := boundedCtx(t, 2*time.Minute)
		for i := 1; i <= n; i++ {
			if err := p.Publish(ctx, Order{ID: i}); err != nil {
				published <- err
				return
			}
			if i%7 == 0 {
				time.Sleep(6 * time.Millisecond) // a pause just past the linger
			}
		}
		published <- p.Shutdown(ctx)
	}()
	for _, at := range []uint64{n / 4, n / 2, 3 * n / 4} {
		eventually(t, "far enough", func() bool { return p.Stats().Confirmed >= at })
		s.Kill()
		s.Restart()
		s.Kill()
		s.Restart()
	}
	if err := <-published; err != nil {
		t.Fatalf("publisher: %v (%s)", err, describe(p.Stats()))
	}
	st := p.Stats()
	t.Logf("%s, retries %d", describe(st), st.Retries)
	if st.Confirmed != n {
		t.Errorf("Stats() = %s; want all %d confirmed", describe(st), n)
	}
	checkWire(t, relay.Published(topic.Name()), st)
	stored := streamOrder(t, subJS, topic.Stream())
	if diff := cmp.Diff(span(1, n), stored); diff != "" {
		t.Errorf("the stream does not hold 1..%d once each in order: %s; duplicates %v missing %v", n, firstDiff(stored, span(1, n)), dupes(stored), missing(stored, n))
	}
}

// TestPublishTooLargeLongName: ErrTooLarge exactly at the documented limit
// (max payload − 94 − len(stream name)) for a topic whose name is as long
// as allowed, and a publisher whose counter has grown.
func TestPublishTooLargeLongName(t *testing.T) {
	const maxPayload = 4096
	s := startServer(t, embedded.Options{MaxPayload: maxPayload})
	_, js := connect(t, s)
	name := strings.Repeat("a", 99) + "." + strings.Repeat("b", 100)
	topic := newTopicOf(t, js, name, natsbridge.Codec[[]byte](bytesCodec{}), natsbridge.TopicOptions{})
	limit := maxPayload - 94 - len(topic.Stream())
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	ctx := testCtx(t)
	for range 1000 {
		if err := p.Publish(ctx, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Publish(ctx, make([]byte, limit)); err != nil {
		t.Errorf("Publish(%d bytes) = %v, want nil", limit, err)
	}
	if err := p.Publish(ctx, make([]byte, limit+1)); !errors.Is(err, natsbridge.ErrTooLarge) {
		t.Errorf("Publish(%d bytes) = %v, want ErrTooLarge", limit+1, err)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Confirmed != 1001 || st.Failed != 0 {
		t.Errorf("Stats() = %s; want 1001 confirmed", describe(st))
	}
}

// TestPublishLoneValueHeld: an idle publisher publishes one value while the
// path to the server is silent (the relay holds every byte): the publisher
// asks where its batch stands, sends no copy, and after its DeliveryTimeout
// (1s) counts the value Failed.
func TestPublishLoneValueHeld(t *testing.T) {
	t.Parallel() // it waits on servers and faults, not on the CPU
	s := natstest.StartServer(t, natstest.Options{})
	relay := natstest.NewRelay(t, s.URL())
	_, js := dial(t, relay.URL())
	topic := newTopic(t, js, "edge.held", natsbridge.TopicOptions{})
	p := publisher(t, topic, natsbridge.PublisherOptions{AckTimeout: 500 * time.Millisecond, DeliveryTimeout: time.Second})
	publishN(t, p, 1, 1)
	eventually(t, "the first value confirmed", func() bool { return p.Stats().Confirmed == 1 })
	time.Sleep(100 * time.Millisecond) // the publisher idle
	relay.Hold()
	publishN(t, p, 2, 2)
	time.Sleep(3 * time.Second) // the silence
	held := p.Stats()
	relay.Release()
	t.Logf("after 3s of silence: %s, retries %d", describe(held), held.Retries)
	if held.Failed != 1 {
		t.Errorf("3s after it was accepted with a 1s delivery timeout, the value is not Failed: %s", describe(held))
	}
	if held.Retries != 0 {
		t.Errorf("in 3s without an answer the value was sent again %d times: the publisher asks where its batch stands, and sends no copy the server did not ask for", held.Retries)
	}
	_ = p.Shutdown(testCtx(t))
}

// TestWatchPurgeMidStream purges the stream while a publisher publishes
// and a slow Block watcher reads: the publisher confirms every value, the
// stream holds a suffix of 1..n once each in order, and the watcher counts
// each value owed to it exactly once, as read or as a gap.
func TestWatchPurgeMidStream(t *testing.T) {
	t.Parallel() // it waits on servers and faults, not on the CPU
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "edge.purge", natsbridge.TopicOptions{Heartbeat: 500 * time.Millisecond})
	w := watch(t, topic, natsbridge.WatchOptions{QueueLength: 16, Full: broadcast.Block})
	var mu sync.Mutex
	var got []int
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for o := range w.All() {
			mu.Lock()
			got = append(got, o.ID)
			mu.Unlock()
			time.Sleep(50 * time.Microsecond) // a slow reader
		}
	}()
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	const n = 10000
	published := make(chan error, 1)
	go func() {
		for i := 1; i <= n; i++ {
			if err := p.Publish(testCtx(t), Order{ID: i}); err != nil {
				published <- err
				return
			}
		}
		published <- p.Shutdown(testCtx(t))
	}()
	eventually(t, "a third confirmed", func() bool { return p.Stats().Confirmed >= n/3 })
	st, err := js.Stream(testCtx(t), topic.Stream())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	ps := p.Stats()
	if ps.Confirmed != n {
		t.Errorf("publisher: %s", describe(ps))
	}
	stored := storedIDs(t, js, topic)
	if len(stored) == 0 || !slices.Equal(stored, span(stored[0], n)) {
		t.Errorf("the stream holds %d values, not a suffix of 1..%d: %s", len(stored), n, firstDiff(stored, span(n-len(stored)+1, n)))
	}
	if err := w.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reader read what the watcher queued", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return uint64(len(got)) == w.Stats().Delivered
	})
	w.Stop()
	<-readerDone
	t.Logf("stream holds %d..%d; watcher read %d, gaps %d, dropped %d", stored[0], n, len(got), w.Stats().Gaps, w.Stats().Dropped)
	if !slices.IsSorted(got) || uint64(len(got))+w.Stats().Gaps != n || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Errorf("the watcher read %d (sorted %v) and counted %d gaps; want them to add up to %d", len(got), slices.IsSorted(got), w.Stats().Gaps, n)
	}
}
