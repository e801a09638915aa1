package natsbridge_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
	"github.com/heraldgo/herald/natsbridge/natstest"
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
	rec := &logRecorder{}
	pubOpts := opts
	pubOpts.Logger = rec.Logger()
	pubTopic := newTopic(t, pubJS, "orders", pubOpts)
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

	p := publisher(t, pubTopic, natsbridge.PublisherOptions{Window: 64, AckTimeout: 500 * time.Millisecond})
	published := make(chan error, 1)
	go func() {
		// The server restarts once a watcher read a third, or the
		// publisher published half (on a loaded machine, the watchers
		// may lag that far): while values are on their way both ways.
		defer once.Do(func() { close(halfway) })
		for i := 1; i <= n; i++ {
			if err := p.Publish(ctx, Order{ID: i}); err != nil {
				published <- err
				return
			}
			if i == n/2 {
				once.Do(func() { close(halfway) })
			}
		}
		published <- p.Shutdown(ctx)
	}()

	<-halfway
	first.Shutdown()
	startServer(t, embedded.Options{Dir: dir, Listen: strings.TrimPrefix(url, "nats://")})

	if err := <-published; err != nil {
		t.Log(rec.String())
		t.Fatalf("publisher: %v; Stats(): %+v", err, p.Stats())
	}
	st := p.Stats()
	if st.Published != n || st.Confirmed != n {
		t.Fatalf("publisher Stats(): %s; want all %d confirmed", describe(st), n)
	}
	stored := streamOrder(t, pubJS, pubTopic.Stream())
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
		if r.w.Stats().Gaps != 0 || r.w.Stats().Dropped != 0 {
			t.Errorf("watcher %d: Gaps %d, Dropped %d; want 0, 0", i, r.w.Stats().Gaps, r.w.Stats().Dropped)
		}
		t.Logf("watcher %d: %d consumer restarts", i, r.w.Stats().Restarts)
	}
	t.Logf("publisher: %d sent again", st.Retries)
}

func sorted(in []int) []int {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
}

// TestServerKilledMidStream kills the nats-server process (SIGKILL) twice
// while a publisher publishes 20 000 values and a Block watcher reads, and
// starts it again on its store: with the server's default sync interval,
// and syncing every write. Every value is confirmed and stored once, in
// the order published; the wire carried no send the publisher did not
// count; the watcher reads exactly the stream.
func TestServerKilledMidStream(t *testing.T) {
	t.Parallel() // it waits on servers and faults, not on the CPU
	for _, always := range []bool{false, true} {
		t.Run(fmt.Sprintf("SyncAlways=%v", always), func(t *testing.T) {
			s := natstest.StartServer(t, natstest.Options{SyncAlways: always})
			relay := natstest.NewRelay(t, s.URL())
			_, pubJS := dial(t, relay.URL())
			_, subJS := dial(t, s.URL())
			opts := natsbridge.TopicOptions{Heartbeat: 500 * time.Millisecond}
			topic := newTopic(t, pubJS, "killed.orders", opts)
			w, err := newTopic(t, subJS, "killed.orders", opts).Watch(testCtx(t), natsbridge.WatchOptions{Full: broadcast.Block})
			if err != nil {
				t.Fatal(err)
			}
			r := startReader(w)
			const n = 20000
			p := publisher(t, topic, natsbridge.PublisherOptions{})
			pr := watchProgress(p)
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
			var kills []time.Time
			for _, at := range []uint64{n / 3, 2 * n / 3} {
				eventually(t, "the publisher is far enough", func() bool { return p.Stats().Confirmed >= at })
				kills = append(kills, time.Now())
				s.Kill()
				s.Restart()
			}
			if err := <-published; err != nil {
				t.Fatalf("publisher: %v (%s)", err, describe(p.Stats()))
			}
			pr.end()
			for i, killed := range kills {
				first, full := pr.recovery(killed, killed)
				logFault(t, "single server, SyncAlways=%v, kill %d: publisher confirming again %v after the kill, at half its former rate after %v", always, i+1, first.Round(time.Millisecond), full.Round(time.Millisecond))
			}
			st := p.Stats()
			if st.Confirmed != n {
				t.Fatalf("publisher Stats(): %s; want all %d confirmed", describe(st), n)
			}
			checkWire(t, relay.Published(topic.Name()), st)
			stored := streamOrder(t, subJS, topic.Stream())
			if diff := cmp.Diff(span(1, n), stored); diff != "" {
				t.Fatalf("the stream does not hold 1..%d once each, in order (-want +got):\n%s", n, diff)
			}
			eventually(t, "the watcher read the whole stream", func() bool { return w.Seq() >= n })
			w.Stop()
			<-r.done
			if diff := cmp.Diff(stored, r.got); diff != "" {
				t.Errorf("the watcher did not read the stream in its order (-stream +read):\n%s", diff)
			}
			logFault(t, "single server, SyncAlways=%v: publisher: %d sent again; watcher: %d consumer restarts, longest stall %v", always, st.Retries, w.Stats().Restarts, r.longestStall(time.Time{}).Round(time.Millisecond))
		})
	}
}

// TestConnectionCutThenSilent resets the publisher's and the watcher's
// connections, then holds every byte both ways for four seconds (a silent
// path, no reset): nothing is lost or stored twice, and order holds.
func TestConnectionCutThenSilent(t *testing.T) {
	t.Parallel() // it waits on servers and faults, not on the CPU
	s := natstest.StartServer(t, natstest.Options{})
	relay := natstest.NewRelay(t, s.URL())
	_, js := dial(t, relay.URL())
	_, adminJS := dial(t, s.URL())
	topic := newTopic(t, js, "silent.orders", natsbridge.TopicOptions{Heartbeat: 500 * time.Millisecond})
	w := watch(t, topic, natsbridge.WatchOptions{Full: broadcast.Block})
	r := startReader(w)
	const n = 10000
	p := publisher(t, topic, natsbridge.PublisherOptions{AckTimeout: time.Second})
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
	relay.Cut()
	eventually(t, "two thirds confirmed", func() bool { return p.Stats().Confirmed >= 2*n/3 })
	relay.Hold()
	time.Sleep(4 * time.Second) // the silent path itself, not a synchronisation
	relay.Release()
	if err := <-published; err != nil {
		t.Fatalf("publisher: %v (%s)", err, describe(p.Stats()))
	}
	st := p.Stats()
	if st.Confirmed != n {
		t.Fatalf("publisher Stats(): %s; want all %d confirmed", describe(st), n)
	}
	checkWire(t, relay.Published(topic.Name()), st)
	stored := streamOrder(t, adminJS, topic.Stream())
	if diff := cmp.Diff(span(1, n), stored); diff != "" {
		t.Fatalf("the stream does not hold 1..%d once each, in order (-want +got):\n%s", n, diff)
	}
	eventually(t, "the watcher read the whole stream", func() bool { return w.Seq() >= n })
	w.Stop()
	<-r.done
	if diff := cmp.Diff(stored, r.got); diff != "" {
		t.Errorf("the watcher did not read the stream in its order (-stream +read):\n%s", diff)
	}
	t.Logf("publisher: %d sent again; watcher: %d consumer restarts", st.Retries, w.Stats().Restarts)
}
