package natsbridge_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestServerRestartMidStream restarts the server, on the same store
// directory, while a publisher publishes and two Block watchers read, each
// over its own TCP connection. The publisher's Shutdown confirms or counts
// every value; the stream holds each value once; both watchers read exactly
// the stream, in its order: nothing lost, nothing twice.
func TestServerRestartMidStream(t *testing.T) {
	dir := t.TempDir()
	first := startServer(t, embedded.Options{Dir: dir, Listen: "127.0.0.1:0"})
	url := first.URL()
	_, pubJS := dial(t, url)
	_, subJS := dial(t, url)
	opts := natsbridge.TopicOptions{Heartbeat: 500 * time.Millisecond}
	pubTopic := newTopic(t, pubJS, "orders", opts)
	subTopic := newTopic(t, subJS, "orders", opts)
	ctx := testCtx(t)

	type reader struct {
		w   *natsbridge.Watcher[Order]
		mu  sync.Mutex
		got []Order
	}
	var readers []*reader
	var wg sync.WaitGroup
	halfway := make(chan struct{})
	var once sync.Once
	const n = 3000
	for _, q := range []int{16, 1000} {
		w, err := subTopic.Watch(ctx, natsbridge.WatchOptions{QueueLength: q, Full: broadcast.Block})
		if err != nil {
			t.Fatal(err)
		}
		r := &reader{w: w}
		readers = append(readers, r)
		wg.Go(func() {
			for o := range w.All() {
				r.mu.Lock()
				r.got = append(r.got, o)
				if len(r.got) == n/3 {
					once.Do(func() { close(halfway) })
				}
				r.mu.Unlock()
			}
		})
	}

	p := pubTopic.Publisher(natsbridge.PublisherOptions{Window: 64, AckTimeout: 500 * time.Millisecond})
	published := make(chan error, 1)
	go func() {
		for i := 1; i <= n; i++ {
			if err := p.Publish(ctx, Order{ID: i}); err != nil {
				published <- err
				return
			}
		}
		published <- p.Shutdown(ctx)
	}()

	select {
	case <-halfway:
	case err := <-published:
		t.Fatalf("publisher finished before a watcher read a third: %v", err)
	}
	first.Shutdown()
	startServer(t, embedded.Options{Dir: dir, Listen: strings.TrimPrefix(url, "nats://")})

	if err := <-published; err != nil {
		t.Fatalf("publisher: %v", err)
	}
	st := p.Stats()
	if st.Published != n || st.Confirmed != n {
		t.Fatalf("publisher Stats(): %s; want all %d confirmed", describe(st), n)
	}
	stored := storedIDs(t, pubJS, pubTopic)
	if diff := cmp.Diff(span(1, n), stored); diff != "" {
		t.Fatalf("stream does not hold 1..%d once each, in the order published (-want +got):\n%s", n, diff)
	}
	for _, r := range readers {
		eventually(t, "the watcher read the whole stream", func() bool { return r.w.Seq() == uint64(n) })
		r.w.Stop()
	}
	wg.Wait()
	for i, r := range readers {
		if diff := cmp.Diff(stored, ids(r.got)); diff != "" {
			t.Errorf("watcher %d did not read the stream's values in its order (-stream +read):\n%s", i, diff)
		}
		if r.w.Gaps() != 0 || r.w.Dropped() != 0 {
			t.Errorf("watcher %d: Gaps %d, Dropped %d; want 0, 0", i, r.w.Gaps(), r.w.Dropped())
		}
		t.Logf("watcher %d: %d consumer restarts", i, r.w.Restarts())
	}
	t.Logf("publisher: %d sent again", st.Retries)
}

func sorted(in []int) []int {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
}
