package natsbridge_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/natstest"
)

// TestClusterFollowersDown kills both followers of a stream replicated on
// three nodes (the leader stays up, with no quorum) while a publisher
// publishes at a steady pace, then restarts them. The package doc says
// that a quorum lost and regained needs nothing of the caller, that every
// value is stored once in order, and that a value is Failed only when the
// stream refused it, found it deleted, or it outlived its delivery timeout
// (two minutes here). So every value must end Confirmed, and the stream
// must hold 1..n once each, in order.
func TestClusterFollowersDown(t *testing.T) {
	t.Parallel() // it waits on servers and faults, not on the CPU
	for _, pace := range []time.Duration{20 * time.Millisecond, 0} {
		t.Run(fmt.Sprintf("pace=%v", pace), func(t *testing.T) {
			c := natstest.StartCluster(t, 3, natstest.Options{})
			relay := natstest.NewRelay(t, c.URLs()...)
			_, pubJS := dial(t, relay.URL())
			_, adminJS := dial(t, c.URL())
			var logs logRecorder
			topic := newTopic(t, pubJS, "cluster.followers", natsbridge.TopicOptions{Replicas: 3, Heartbeat: 500 * time.Millisecond, Logger: logs.Logger()})
			ctx := boundedCtx(t, 2*time.Minute)
			n := 1000
			if pace == 0 {
				n = 10000
			}
			p := publisher(t, topic, natsbridge.PublisherOptions{})
			published := make(chan error, 1)
			go func() {
				for i := 1; i <= n; i++ {
					if err := p.Publish(ctx, Order{ID: i}); err != nil {
						published <- err
						return
					}
					if pace > 0 {
						time.Sleep(pace) // a steady publisher, not a synchronisation
					}
				}
				published <- p.Shutdown(ctx)
			}()
			eventually(t, "a tenth confirmed", func() bool { return p.Stats().Confirmed >= uint64(n/10) })
			leader := c.StreamLeader(adminJS, topic.Stream())
			var down []*natstest.Server
			for _, s := range c.Servers {
				if s != leader {
					down = append(down, s)
				}
			}
			before := p.Stats()
			for _, s := range down {
				s.Kill()
			}
			time.Sleep(6 * time.Second) // the outage itself
			during := p.Stats()
			for _, s := range down {
				s.Restart()
			}
			now := c.WaitStreamLeader(adminJS, topic.Stream(), nil)
			t.Logf("leader %s kept up, followers down 6s; before: %s; after 6s: %s retries %d; leader now %s",
				leader.Name(), describe(before), describe(during), during.Retries, now.Name())
			if err := <-published; err != nil {
				t.Fatalf("publisher: %v (%s)", err, describe(p.Stats()))
			}
			st := p.Stats()
			t.Logf("final: %s, retries %d", describe(st), st.Retries)
			stored := streamOrder(t, adminJS, topic.Stream())
			if st.Failed != 0 || st.Confirmed != uint64(n) {
				t.Errorf("publisher Stats(): %s; want all %d confirmed, none failed (log: %s)", describe(st), n, firstLines(logs.String(), 5))
			}
			checkWire(t, relay.Published(topic.Name()), st)
			if diff := cmp.Diff(span(1, n), stored); diff != "" {
				t.Errorf("the stream does not hold 1..%d once each, in order: %s", n, firstDiff(stored, span(1, n)))
				t.Logf("stream holds %d values; duplicates: %v; missing: %v", len(stored), dupes(stored), missing(stored, n))
			}
		})
	}
}

// TestClusterManyPublishersLeaderKilled runs four publishers on one
// replicated topic, each from its own connection through the relay, while
// the stream's leader is killed twice. Each publisher's values must be
// stored once each, in that publisher's order, all confirmed.
func TestClusterManyPublishersLeaderKilled(t *testing.T) {
	t.Parallel() // it waits on servers and faults, not on the CPU
	c := natstest.StartCluster(t, 3, natstest.Options{})
	relay := natstest.NewRelay(t, c.URLs()...)
	_, adminJS := dial(t, c.URL())
	ctx := boundedCtx(t, 2*time.Minute)
	const pubs, each = 4, 4000
	var ps []*natsbridge.Publisher[Order]
	var topics []*natsbridge.Topic[Order]
	for range pubs {
		_, js := dial(t, relay.URL())
		topic := clusterTopic(t, js, "cluster.many")
		topics = append(topics, topic)
		ps = append(ps, publisher(t, topic, natsbridge.PublisherOptions{AckTimeout: time.Second}))
	}
	errs := make(chan error, pubs)
	for k, p := range ps {
		go func() {
			name := fmt.Sprintf("p%d", k)
			for i := 1; i <= each; i++ {
				if err := p.Publish(ctx, Order{ID: i, Item: name}); err != nil {
					errs <- err
					return
				}
			}
			errs <- p.Shutdown(ctx)
		}()
	}
	total := func() uint64 {
		var n uint64
		for _, p := range ps {
			n += p.Stats().Confirmed
		}
		return n
	}
	for _, at := range []uint64{pubs * each / 3, 2 * pubs * each / 3} {
		eventually(t, "far enough", func() bool { return total() >= at })
		old := c.StreamLeader(adminJS, topics[0].Stream())
		old.Kill()
		c.WaitStreamLeader(adminJS, topics[0].Stream(), old)
		old.Restart()
	}
	for range pubs {
		if err := <-errs; err != nil {
			t.Errorf("publisher: %v", err)
		}
	}
	var wire, sends uint64
	for k, p := range ps {
		st := p.Stats()
		sends += st.Published + st.Retries
		t.Logf("p%d: %s, retries %d", k, describe(st), st.Retries)
		if st.Confirmed != each || st.Failed != 0 {
			t.Errorf("p%d: %s; want all %d confirmed", k, describe(st), each)
		}
	}
	wire = uint64(relay.Published(topics[0].Name()))
	t.Logf("wire %d, counted sends %d", wire, sends)
	if wire > sends {
		t.Errorf("the wire carried %d values, the publishers count %d sends", wire, sends)
	}
	stored := streamOrderOrders(t, adminJS, topics[0].Stream())
	per := map[string][]int{}
	for _, o := range stored {
		per[o.Item] = append(per[o.Item], o.ID)
	}
	for k := range pubs {
		name := fmt.Sprintf("p%d", k)
		if got := per[name]; !slices.Equal(got, span(1, each)) {
			t.Errorf("%s: the stream holds %d of its values, not 1..%d once each in order: %s", name, len(got), each, firstDiff(got, span(1, each)))
		}
	}
}

// streamOrderOrders is streamOrder keeping whole orders.
func streamOrderOrders(t testing.TB, js jetstream.JetStream, stream string) []Order {
	t.Helper()
	ctx := faultCtx(t)
	var out []Order
	codec := natsbridge.JSON[Order]()
	next, last := uint64(1), uint64(0)
	var failure error
	for ctx.Err() == nil {
		if failure != nil {
			time.Sleep(50 * time.Millisecond) // the cluster settling
		}
		short, cancel := context.WithTimeout(ctx, 5*time.Second)
		var done bool
		done, next, failure = readStream(short, js, stream, next, &last, func(data []byte) {
			o, err := codec.Unmarshal(data)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, o)
		})
		cancel()
		if done {
			return out
		}
	}
	t.Fatalf("reading stream %q: %v", stream, failure)
	return nil
}

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

func dupes(ids []int) []int {
	seen := map[int]int{}
	var out []int
	for _, id := range ids {
		seen[id]++
		if seen[id] == 2 {
			out = append(out, id)
		}
	}
	if len(out) > 20 {
		out = out[:20]
	}
	return out
}

func missing(ids []int, n int) []int {
	seen := map[int]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	var out []int
	for i := 1; i <= n; i++ {
		if !seen[i] {
			out = append(out, i)
		}
	}
	if len(out) > 20 {
		out = out[:20]
	}
	return out
}

// TestClusterConfirmedThenLost: both followers of a replicated stream are
// down; a value published alone reaches the leader, which cannot commit
// it. The publisher's connection (through a relay, to the leader) is cut.
// Had it sent the value again on reconnecting, the leader would have
// answered the copy (a duplicate of a write still in progress) with a flow
// ack, and the value, counted Confirmed, would have been lost with that
// leader: it asks where its batch stands instead, and waits. Then the
// leader is killed too, and the followers come back and elect a leader of
// their own; the old leader rejoins. Every value is confirmed only once
// stored, and stored once, in order.
func TestClusterConfirmedThenLost(t *testing.T) {
	t.Parallel() // it waits on servers and faults, not on the CPU
	c := natstest.StartCluster(t, 3, natstest.Options{})
	_, adminJS := dial(t, c.URL())
	topic0 := newTopic(t, adminJS, "cluster.lost", natsbridge.TopicOptions{Replicas: 3})
	leader := c.StreamLeader(adminJS, topic0.Stream())
	relay := natstest.NewRelay(t, leader.URL())
	_, pubJS := dial(t, relay.URL())
	topic := newTopic(t, pubJS, "cluster.lost", natsbridge.TopicOptions{})
	ctx := boundedCtx(t, 2*time.Minute)
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	publishN(t, p, 1, 1)
	eventually(t, "the first value confirmed", func() bool { return p.Stats().Confirmed == 1 })
	var followers []*natstest.Server
	for _, s := range c.Servers {
		if s != leader {
			followers = append(followers, s)
		}
	}
	for _, s := range followers {
		s.Kill()
	}
	publishN(t, p, 2, 2)
	time.Sleep(200 * time.Millisecond) // the value reaches the leader
	relay.Cut()
	time.Sleep(3 * time.Second) // reconnected, and no quorum: the outage itself
	st := p.Stats()
	t.Logf("3s after the cut, with no quorum: %s, retries %d, LastSeq %d", describe(st), st.Retries, st.LastSeq)
	if st.Confirmed != 1 {
		t.Errorf("with no quorum the publisher confirmed %d values, want 1: value 2 is not stored yet", st.Confirmed)
	}
	leader.Kill()
	for _, s := range followers {
		s.Restart()
	}
	c.WaitJetStream()
	now := c.WaitStreamLeader(adminJS, topic.Stream(), nil)
	leader.Restart()
	time.Sleep(2 * time.Second) // the old leader rejoining
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	st = p.Stats()
	stored := streamOrder(t, adminJS, topic.Stream())
	t.Logf("leader %s killed, %s elected; final: %s, retries %d, LastSeq %d; the stream holds %v", leader.Name(), now.Name(), describe(st), st.Retries, st.LastSeq, stored)
	if st.Confirmed != 2 || !slices.Equal(stored, []int{1, 2}) {
		t.Errorf("the publisher confirmed %d values; the stream holds %v; want both, stored once, in order", st.Confirmed, stored)
	}
}

// TestClusterLoneValueNoAnswer: an idle publisher publishes one value while
// its stream has no leader (two of three nodes down), with a plain
// subscriber on the subject so that the publish gets no answer at all (as
// in TestClusterQuorumLost). The publisher's connection, to the surviving
// node, is never lost. The publisher asks where its batch stands
// (AckTimeout) and sends no copy meanwhile; once the nodes are back and a
// leader is elected, the value (and those published after it) must be
// confirmed within seconds.
func TestClusterLoneValueNoAnswer(t *testing.T) {
	t.Parallel() // it waits on servers and faults, not on the CPU
	c := natstest.StartCluster(t, 3, natstest.Options{})
	_, adminJS := dial(t, c.URL())
	topic0 := newTopic(t, adminJS, "cluster.noanswer", natsbridge.TopicOptions{Replicas: 3})
	leader := c.StreamLeader(adminJS, topic0.Stream())
	var survivor *natstest.Server
	var down []*natstest.Server
	for _, s := range c.Servers {
		if s != leader && survivor == nil {
			survivor = s
		} else {
			down = append(down, s)
		}
	}
	nc, pubJS := dial(t, survivor.URL())
	topic := newTopic(t, pubJS, "cluster.noanswer", natsbridge.TopicOptions{})
	sub, err := nc.Subscribe(topic.Name(), func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	p := publisher(t, topic, natsbridge.PublisherOptions{AckTimeout: time.Second})
	publishN(t, p, 1, 1)
	eventually(t, "the first value confirmed", func() bool { return p.Stats().Confirmed == 1 })
	for _, s := range down {
		s.Kill()
	}
	publishN(t, p, 2, 2)
	time.Sleep(3 * time.Second) // the outage
	during := p.Stats()
	for _, s := range down {
		s.Restart()
	}
	c.WaitStreamLeader(adminJS, topic.Stream(), nil)
	elected := time.Now()
	publishN(t, p, 3, 100)
	deadline := time.Now().Add(15 * time.Second)
	for p.Stats().Confirmed < 100 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling the publisher's counts
	}
	st := p.Stats()
	t.Logf("during the 3s outage: %s, retries %d (the doc: asked again at least every second); %v after the election: %s, retries %d",
		describe(during), during.Retries, time.Since(elected).Round(time.Millisecond), describe(st), st.Retries)
	if during.Retries != 0 {
		t.Errorf("in 3s without an answer the publisher sent its lone value again %d times; it asks where its batch stands, and sends no copy the server did not ask for", during.Retries)
	}
	if st.Confirmed != 100 {
		t.Errorf("15s after the election the publisher has confirmed %d of 100 values: %s", st.Confirmed, describe(st))
	}
	// Let the test end: Shutdown wakes the publisher.
	if err := p.Shutdown(boundedCtx(t, 30*time.Second)); err != nil {
		t.Errorf("Shutdown: %v (%s)", err, describe(p.Stats()))
	}
}
