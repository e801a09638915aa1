package natsbridge_test

import (
	"context"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/natstest"
)

// The cluster tests run every promise of the package doc on a real
// three-node JetStream cluster (nats-server processes on loopback, built
// from the module version natsbridge requires), with the stream replicated
// three times, while nodes are killed with SIGKILL and started again. The
// publisher reaches the cluster through a relay that counts every publish
// on the wire. They log how long each fault took to heal: run them with
// -v to read the figures.

// clusterTopic is a replicated topic of Orders on c, opened through js.
func clusterTopic(t testing.TB, js jetstream.JetStream, name string) *natsbridge.Topic[Order] {
	t.Helper()
	return newTopic(t, js, name, natsbridge.TopicOptions{Replicas: 3, Heartbeat: 500 * time.Millisecond})
}

// progress samples a publisher's confirmed count every few milliseconds,
// so that a test can say when values stopped and started flowing.
type progress struct {
	mu      sync.Mutex // guards samples
	samples []sample
	stop    chan struct{}
	done    chan struct{}
}

type sample struct {
	at        time.Time
	confirmed uint64
}

func watchProgress(p *natsbridge.Publisher[Order]) *progress {
	pr := &progress{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(pr.done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			pr.mu.Lock()
			pr.samples = append(pr.samples, sample{time.Now(), p.Stats().Confirmed})
			pr.mu.Unlock()
			select {
			case <-tick.C:
			case <-pr.stop:
				return
			}
		}
	}()
	return pr
}

func (pr *progress) end() {
	close(pr.stop)
	<-pr.done
}

// rate returns the values confirmed per second over the window ending at t.
func (pr *progress) rate(t time.Time, window time.Duration) float64 {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	at := func(t time.Time) uint64 {
		i, _ := slices.BinarySearchFunc(pr.samples, t, func(s sample, t time.Time) int { return s.at.Compare(t) })
		if i >= len(pr.samples) {
			i = len(pr.samples) - 1
		}
		return pr.samples[i].confirmed
	}
	return float64(at(t)-at(t.Add(-window))) / window.Seconds()
}

// recovery returns how long after from the publisher confirmed its first
// value, and how long until it confirmed values at half the rate it had
// before (see recoveryTo).
func (pr *progress) recovery(before, from time.Time) (first, full time.Duration) {
	return pr.recoveryTo(before, from, 0.5)
}

// recoveryTo returns how long after from the publisher confirmed its first
// value, and how long until it confirmed values at the share of the rate
// it had before (the rate over the 500ms window ending at before, against
// 100ms windows that begin after from).
func (pr *progress) recoveryTo(before, from time.Time, share float64) (first, full time.Duration) {
	const window = 100 * time.Millisecond
	base := pr.rate(before, 5*window)
	pr.mu.Lock()
	samples := slices.Clone(pr.samples)
	pr.mu.Unlock()
	var at uint64
	for _, s := range samples {
		if !s.at.Before(from) {
			at = s.confirmed
			break
		}
	}
	first, full = -1, -1
	for _, s := range samples {
		if s.at.Before(from) {
			continue
		}
		if first < 0 && s.confirmed > at {
			first = s.at.Sub(from)
		}
		if full < 0 && !s.at.Add(-window).Before(from) && pr.rate(s.at, window) >= base*share {
			full = s.at.Add(-window).Sub(from)
		}
	}
	return first, full
}

// reader reads a watcher to its end, noting when each value came.
type reader struct {
	w     *natsbridge.Watcher[Order] // nil for a watcher of a mirror
	mu    sync.Mutex                 // guards got, times
	got   []int
	times []time.Time
	done  chan struct{}
}

func startReader(w *natsbridge.Watcher[Order]) *reader {
	r := readAllOf(w.All())
	r.w = w
	return r
}

// readAllOf reads all to its end in a goroutine of its own.
func readAllOf(all iter.Seq[Order]) *reader {
	r := &reader{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for o := range all {
			r.mu.Lock()
			r.got = append(r.got, o.ID)
			r.times = append(r.times, time.Now())
			r.mu.Unlock()
		}
	}()
	return r
}

// read returns what the reader read so far.
func (r *reader) read() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// longestStall returns the longest time between two values the reader
// read after from.
func (r *reader) longestStall(from time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var longest time.Duration
	for i := 1; i < len(r.times); i++ {
		if r.times[i].After(from) {
			longest = max(longest, r.times[i].Sub(r.times[i-1]))
		}
	}
	return longest
}

// streamOrder returns the IDs the stream holds, in stream order, read by a
// consumer of the test's own. Every request is tried again until it
// works, within faultCtx: a server may have restarted a moment ago, its
// JetStream not yet up, or a request written into the connection as the
// server went away be lost; a cluster may place the consumer on a node
// killed a moment ago.
func streamOrder(t testing.TB, js jetstream.JetStream, stream string) []int {
	t.Helper()
	var out []int
	for _, o := range streamOrderOrders(t, js, stream) {
		out = append(out, o.ID)
	}
	return out
}

// readStream reads stream from sequence next up to its last sequence
// (found at the first call, kept in *last) and reports whether it got
// there, and the next sequence to read.
func readStream(ctx context.Context, js jetstream.JetStream, stream string, next uint64, last *uint64, each func([]byte)) (bool, uint64, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return false, next, err
	}
	if *last == 0 {
		*last = s.CachedInfo().State.LastSeq
	}
	if next > *last {
		return true, next, nil
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: next})
	if err != nil {
		return false, next, err
	}
	for next <= *last {
		if err := ctx.Err(); err != nil { // the last values may be gone: no fetch reaches them
			return false, next, err
		}
		batch, err := c.Fetch(int(min(*last-next+1, 1000)), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return false, next, err
		}
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				return false, next, err
			}
			each(m.Data())
			next = md.Sequence.Stream + 1
		}
		if err := batch.Error(); err != nil {
			return false, next, err
		}
	}
	return true, next, nil
}

// TestClusterLeaderKilled publishes 20 000 values to a stream replicated on
// three nodes while its leader is killed (SIGKILL) twice, each time
// restarted once a new leader is elected. Every value is confirmed and
// stored once, in the order published; the retries the publisher counts
// are the sends on the wire after the first. Meanwhile every kind of reader
// keeps its promise: two Block watchers and a mirror's Block watcher read
// exactly the stream, in its order; a DropOldest watcher reads part of it,
// in order, and counts the rest as dropped; a watcher stopped after the
// first kill and resumed from Seq()+1 reads, with its successor, exactly
// the stream.
func TestClusterLeaderKilled(t *testing.T) {
	t.Parallel() // it waits on servers and faults, not on the CPU
	c := natstest.StartCluster(t, 3, natstest.Options{})
	relay := natstest.NewRelay(t, c.URLs()...)
	_, pubJS := dial(t, relay.URL())
	_, subJS := dial(t, c.URL())
	_, adminJS := dial(t, c.URL())
	topic := clusterTopic(t, pubJS, "cluster.orders")
	subTopic := clusterTopic(t, subJS, "cluster.orders")
	ctx := faultCtx(t)
	watch := func(o natsbridge.WatchOptions) *reader {
		w, err := subTopic.Watch(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return startReader(w)
	}
	exact := map[string]*reader{
		"Block, queue 16":   watch(natsbridge.WatchOptions{QueueLength: 16, Full: broadcast.Block}),
		"Block, queue 1000": watch(natsbridge.WatchOptions{QueueLength: 1000, Full: broadcast.Block}),
	}
	dropping := watch(natsbridge.WatchOptions{QueueLength: 64, Full: broadcast.DropOldest})
	resumed := watch(natsbridge.WatchOptions{Full: broadcast.Block})
	m, err := subTopic.Mirror(ctx, broadcast.Options{})
	if err != nil {
		t.Fatal(err)
	}
	local, err := m.Watch()
	if err != nil {
		t.Fatal(err)
	}
	exact["mirror's Block watcher"] = readAllOf(local.All())

	const n = 20000
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	pr := watchProgress(p)
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

	var first *reader // the resumed watcher before its Stop
	for k, at := range []uint64{n / 3, 2 * n / 3} {
		eventually(t, "the publisher is far enough", func() bool { return p.Stats().Confirmed >= at })
		old := c.StreamLeader(adminJS, topic.Stream())
		killed := time.Now()
		old.Kill()
		leader := c.WaitStreamLeader(adminJS, topic.Stream(), old)
		elected := time.Now()
		old.Restart()
		resume, full := pr.recovery(killed, elected)
		logFault(t, "kill %d: leader %s killed, %s elected after %v; publisher confirming again %v after the election, at half its former rate after %v",
			k+1, old.Name(), leader.Name(), elected.Sub(killed).Round(time.Millisecond), resume.Round(time.Millisecond), full.Round(time.Millisecond))
		if k == 0 {
			first = resumed
			first.w.Stop()
			<-first.done
			resumed = watch(natsbridge.WatchOptions{Full: broadcast.Block, From: first.w.Seq() + 1})
		}
	}
	if err := <-published; err != nil {
		t.Fatalf("publisher: %v (%s)", err, describe(p.Stats()))
	}
	pr.end()
	st := p.Stats()
	if st.Published != n || st.Confirmed != n {
		t.Fatalf("publisher Stats(): %s; want all %d confirmed", describe(st), n)
	}
	checkWire(t, relay.Published(topic.Name()), st)
	stored := streamOrder(t, adminJS, topic.Stream())
	if diff := cmp.Diff(span(1, n), stored); diff != "" {
		t.Fatalf("the stream does not hold 1..%d once each, in order (-want +got):\n%s", n, diff)
	}
	// A watcher's longest stall across the two elections runs to 16–18 s
	// on a loaded machine (the fault lines): a minute, not 30 s.
	for _, r := range []*reader{exact["Block, queue 16"], exact["Block, queue 1000"], dropping, resumed} {
		eventuallyWithin(t, time.Minute, "the watcher read the whole stream", func() bool { return r.w.Seq() >= n })
		r.w.Stop()
		<-r.done
	}
	eventuallyWithin(t, time.Minute, "the mirror read the whole stream", func() bool { return len(exact["mirror's Block watcher"].read()) == n })
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	<-exact["mirror's Block watcher"].done
	for name, r := range exact {
		if diff := cmp.Diff(stored, r.got); diff != "" {
			t.Errorf("%s did not read the stream in its order (-stream +read):\n%s", name, diff)
		}
		if r.w != nil && (r.w.Stats().Gaps != 0 || r.w.Stats().Dropped != 0) {
			t.Errorf("%s: Gaps %d, Dropped %d; want 0, 0", name, r.w.Stats().Gaps, r.w.Stats().Dropped)
		}
		logFault(t, "%s: longest stall %v", name, r.longestStall(time.Time{}).Round(time.Millisecond))
	}
	if got := dropping.got; !slices.IsSorted(got) || uint64(len(got))+dropping.w.Stats().Dropped != n {
		t.Errorf("the DropOldest watcher read %d values (in order: %v) and dropped %d; want them to add up to %d", len(got), slices.IsSorted(got), dropping.w.Stats().Dropped, n)
	}
	if diff := cmp.Diff(stored, append(slices.Clone(first.got), resumed.got...)); diff != "" {
		t.Errorf("a watcher resumed from Seq()+1 did not read, with its predecessor, the stream (-stream +read):\n%s", diff)
	}
	t.Logf("publisher: %d values, %d sent again", n, st.Retries)
}

// TestClusterQuorumLost stops two of the three nodes for ten seconds while
// a publisher publishes, with a plain NATS subscriber listening on the
// topic's subject: a publish that no stream takes then gets no answer at
// all (not "no responders"). When the nodes are back and a leader is
// elected, the publisher sends again on its live connection and every value
// is confirmed, stored once, in order.
func TestClusterQuorumLost(t *testing.T) {
	t.Parallel() // it waits on servers and faults, not on the CPU
	c := natstest.StartCluster(t, 3, natstest.Options{})
	relay := natstest.NewRelay(t, c.URLs()...)
	_, pubJS := dial(t, relay.URL())
	nc, adminJS := dial(t, c.URL())
	topic := clusterTopic(t, pubJS, "quorum.orders")
	sub, err := nc.Subscribe(topic.Name(), func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	ctx := faultCtx(t)
	_, subJS := dial(t, c.URL())
	w, err := clusterTopic(t, subJS, "quorum.orders").Watch(ctx, natsbridge.WatchOptions{Full: broadcast.Block})
	if err != nil {
		t.Fatal(err)
	}
	r := startReader(w)

	const n = 10000
	p := publisher(t, topic, natsbridge.PublisherOptions{AckTimeout: time.Second})
	pr := watchProgress(p)
	var count atomic.Int64
	published := make(chan error, 1)
	go func() {
		for i := 1; i <= n; i++ {
			if err := p.Publish(ctx, Order{ID: i}); err != nil {
				published <- err
				return
			}
			count.Add(1)
		}
		published <- p.Shutdown(ctx)
	}()

	eventually(t, "the publisher is a third through", func() bool { return p.Stats().Confirmed >= n/3 })
	leader := c.StreamLeader(adminJS, topic.Stream())
	var down []*natstest.Server
	for _, s := range c.Servers {
		if s != leader && len(down) < 2 {
			down = append(down, s)
		}
	}
	down = append(down[:1], leader) // the leader and one other
	lost := time.Now()
	for _, s := range down {
		s.Kill()
	}
	time.Sleep(10 * time.Second) // the outage itself, not a synchronisation
	stalled := p.Stats()
	for _, s := range down {
		s.Restart()
	}
	back := time.Now()
	now := c.WaitStreamLeader(adminJS, topic.Stream(), nil)
	elected := time.Now()
	first, full := pr.recovery(lost, elected)
	logFault(t, "quorum lost for %v (accepted meanwhile: %d values, %d pending); %s elected %v after the restarts; publisher confirming again %v after the election, at half its former rate after %v",
		back.Sub(lost).Round(time.Millisecond), count.Load(), stalled.Pending, now.Name(), elected.Sub(back).Round(time.Millisecond), first.Round(time.Millisecond), full.Round(time.Millisecond))

	if err := <-published; err != nil {
		t.Fatalf("publisher: %v (%s)", err, describe(p.Stats()))
	}
	pr.end()
	st := p.Stats()
	if st.Published != n || st.Confirmed != n {
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
		t.Errorf("the Block watcher did not read the stream in its order (-stream +read):\n%s", diff)
	}
	logFault(t, "quorum: Block watcher: longest stall %v", r.longestStall(time.Time{}).Round(time.Millisecond))
	t.Logf("publisher: %d values, %d sent again", n, st.Retries)
}

// checkWire checks the sends a relay counted against the publisher's
// counts: every value at least once (each was confirmed, so one of its
// sends reached the server), and no send the publisher did not count
// (nats.go's own retries, say). The relay counts what reaches it: a send
// that was still in the connection's socket buffers when a killed server
// took the connection down never does, so the wire may carry fewer than
// Published + Retries, never more.
func checkWire(t testing.TB, wire int, st natsbridge.PublisherStats) {
	t.Helper()
	if sent := int(st.Published + st.Retries); wire < int(st.Confirmed) || wire > sent {
		t.Errorf("the wire carried %d values; the publisher confirmed %d and counts %d sends (%d + %d retries)", wire, st.Confirmed, sent, st.Published, st.Retries)
	}
	t.Logf("the wire carried %d values; the publisher counts %d + %d retries", wire, st.Published, st.Retries)
}

// TestClusterDurable: two processes' durable watchers share a position on
// a stream replicated on three nodes while the durable consumer's leader
// is killed and restarted. Every value is read at least once, each reader
// reads in stream order, and a value read by both is counted in the one's
// Redelivered that read it second. A change of the consumer's leader
// forgets whose turn it is: the next value may go to the other reader,
// which takes over from the last acknowledged value while the first may
// still hand out what it holds, up to its reservation (see the package
// doc); the test measures that overlap.
func TestClusterDurable(t *testing.T) {
	t.Parallel() // it waits on servers and faults, not on the CPU
	c := natstest.StartCluster(t, 3, natstest.Options{})
	_, pubJS := dial(t, c.URL())
	_, adminJS := dial(t, c.URL())
	topic := clusterTopic(t, pubJS, "cluster.durable")
	ctx := faultCtx(t)
	var readers []*reader
	for range 2 {
		_, js := dial(t, c.URL())
		w, err := clusterTopic(t, js, "cluster.durable").Watch(ctx, natsbridge.WatchOptions{Durable: "billing"})
		if err != nil {
			t.Fatal(err)
		}
		readers = append(readers, startReader(w))
	}
	const n = 10000
	p := publisher(t, topic, natsbridge.PublisherOptions{})
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
	eventually(t, "a third read", func() bool { return len(readers[0].read())+len(readers[1].read()) >= n/3 })
	old := c.ConsumerLeader(adminJS, topic.Stream(), "billing")
	killed := time.Now()
	old.Kill()
	leader := c.WaitConsumerLeader(adminJS, topic.Stream(), "billing", old)
	elected := time.Now()
	old.Restart()
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	eventually(t, "the durable position read to the end", func() bool {
		for _, r := range readers {
			if got := r.read(); len(got) > 0 && got[len(got)-1] == n {
				return true
			}
		}
		return false
	})
	for _, r := range readers {
		r.w.Stop()
		<-r.done
	}
	seen := map[int]int{}
	var redelivered uint64
	for i, r := range readers {
		if !slices.IsSorted(r.got) || len(slices.Compact(slices.Clone(r.got))) != len(r.got) {
			t.Errorf("reader %d did not read in stream order, or read a value twice", i)
		}
		for _, id := range r.got {
			seen[id]++
		}
		redelivered += r.w.Stats().Redelivered
	}
	twice := 0
	for id := 1; id <= n; id++ {
		switch seen[id] {
		case 0:
			t.Fatalf("value %d was read by neither reader", id)
		case 2:
			twice++
		}
	}
	if uint64(twice) > redelivered {
		t.Errorf("%d values read by both readers, %d counted as redelivered", twice, redelivered)
	}
	inside, span := interleaved(readers[0], readers[1])
	logFault(t, "durable: consumer leader %s killed, %s elected after %v; readers read %d and %d values, %d by both (read again after a hand-over), %d redelivered; %d handed out inside the other's run of reads (concurrent overlap, %v)",
		old.Name(), leader.Name(), elected.Sub(killed).Round(time.Millisecond), len(readers[0].got), len(readers[1].got), twice, redelivered, inside, span.Round(time.Millisecond))
}

// interleaved measures how long two readers of one durable position
// handed out values at the same time: it counts the values each read
// between two reads of the other less than 20ms apart (inside the
// other's run), and returns the time from the first such read to the
// last.
func interleaved(a, b *reader) (n int, span time.Duration) {
	var first, last time.Time
	count := func(x, y *reader) {
		for _, at := range x.times {
			i, _ := slices.BinarySearchFunc(y.times, at, func(t, at time.Time) int { return t.Compare(at) })
			if i == 0 || i == len(y.times) || y.times[i].Sub(y.times[i-1]) >= 20*time.Millisecond {
				continue
			}
			n++
			if first.IsZero() || at.Before(first) {
				first = at
			}
			if at.After(last) {
				last = at
			}
		}
	}
	count(a, b)
	count(b, a)
	return n, last.Sub(first)
}
