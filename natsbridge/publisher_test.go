package natsbridge_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestPublishConfirmsInOrder publishes from several goroutines: every value
// is confirmed, and each goroutine's values are stored in its order.
func TestPublishConfirmsInOrder(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	p := publisher(t, topic, natsbridge.PublisherOptions{Window: 16})
	const writers, each = 4, 250
	ctx := testCtx(t)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				if err := p.Publish(ctx, Order{ID: g*each + i, Item: strconv.Itoa(g)}); err != nil {
					t.Errorf("Publish: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	got := p.Stats()
	want := natsbridge.PublisherStats{Published: writers * each, Confirmed: writers * each, LastSeq: writers * each}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Stats() (-want +got):\n%s", diff)
	}
	w, err := topic.Watch(ctx, natsbridge.WatchOptions{From: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	last := map[string]int{}
	for _, o := range take(t, w, writers*each) {
		if prev, ok := last[o.Item]; ok && o.ID <= prev {
			t.Fatalf("writer %s: value %d stored after %d", o.Item, o.ID, prev)
		}
		last[o.Item] = o.ID
	}
}

// TestPublishInvalid sends values that cannot be published: each gets a clear
// error and a count, nothing is stored, and the publisher goes on.
func TestPublishInvalid(t *testing.T) {
	s := startServer(t, embedded.Options{MaxPayload: 1024})
	_, js := connect(t, s)
	topic := newTopicOf(t, js, "orders", badCodec{natsbridge.JSON[Order]()}, natsbridge.TopicOptions{})
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	ctx := testCtx(t)
	tests := []struct {
		name string
		v    Order
		want error
	}{
		{"codec error", Order{ID: -1}, natsbridge.ErrCodec},
		{"codec panic", Order{ID: -666}, natsbridge.ErrCodec},
		{"over the server's max payload", Order{ID: 1, Item: strings.Repeat("x", 2000)}, natsbridge.ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := p.Publish(ctx, tc.v); !errors.Is(err, tc.want) {
				t.Errorf("Publish = %v, want %v", err, tc.want)
			}
			if sent, err := p.TryPublish(tc.v); sent || !errors.Is(err, tc.want) {
				t.Errorf("TryPublish = %v, %v; want false, %v", sent, err, tc.want)
			}
		})
	}
	if err := p.Publish(ctx, Order{ID: 7}); err != nil {
		t.Fatalf("Publish after invalid values: %v", err)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	want := natsbridge.PublisherStats{Published: 1, Confirmed: 1, Invalid: 6, LastSeq: 1}
	if diff := cmp.Diff(want, p.Stats()); diff != "" {
		t.Errorf("Stats() (-want +got):\n%s", diff)
	}
}

// TestPublisherBadOptions: options no Publisher can work with are an
// error that names the field (and the limit); the largest window works.
func TestPublisherBadOptions(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	tests := []struct {
		name string
		o    natsbridge.PublisherOptions
		want string // in the error
	}{
		{"negative Window", natsbridge.PublisherOptions{Window: -1}, "PublisherOptions.Window"},
		{"negative AckTimeout", natsbridge.PublisherOptions{AckTimeout: -1}, "PublisherOptions.AckTimeout"},
		{"Window above MaxWindow", natsbridge.PublisherOptions{Window: natsbridge.MaxWindow + 1}, "PublisherOptions.Window 1048577 is above MaxWindow (1048576)"},
		{"huge Window", natsbridge.PublisherOptions{Window: 1 << 50}, "above MaxWindow"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := topic.Publisher(tc.o)
			if p != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Publisher(%+v) = %v, %v; want an error holding %q", tc.o, p, err, tc.want)
			}
		})
	}
	p := publisher(t, topic, natsbridge.PublisherOptions{Window: natsbridge.MaxWindow})
	publishN(t, p, 1, 3)
	if err := p.Shutdown(testCtx(t)); err != nil || p.Stats().Confirmed != 3 {
		t.Errorf("Publisher(Window: MaxWindow): Shutdown = %v, %s; want nil, 3 confirmed", err, describe(p.Stats()))
	}
}

// TestPublisherLogCounted: a burst of values the publisher refuses is
// logged in one line, and the ones that line did not report are reported,
// with their count, when the publisher shuts down.
func TestPublisherLogCounted(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	var log logRecorder
	topic := newTopicOf(t, js, "orders", badCodec{natsbridge.JSON[Order]()}, natsbridge.TopicOptions{Logger: log.Logger()})
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	const invalid = 10
	for range invalid {
		if err := p.Publish(testCtx(t), Order{ID: -1}); !errors.Is(err, natsbridge.ErrCodec) {
			t.Fatalf("Publish = %v, want ErrCodec", err)
		}
	}
	if err := p.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := p.Stats().Invalid; got != invalid {
		t.Fatalf("Stats().Invalid = %d, want %d", got, invalid)
	}
	if got := log.reported("natsbridge: value not published"); got != invalid {
		t.Errorf("log lines account for %d values not published, want %d:\n%s", got, invalid, log.String())
	}
}

// TestPublishInvalidLogsNoValue: a value the codec cannot encode is logged
// without its content, also when the codec's error or panic quotes it;
// the error Publish returns keeps the codec's text.
func TestPublishInvalidLogsNoValue(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	tests := []struct {
		name string
		v    Order
	}{
		{"codec error", Order{ID: -1, Item: secret}},
		{"codec panic", Order{ID: -2, Item: secret}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var log logRecorder
			topic := newTopicOf(t, js, "invalid.case"+strconv.Itoa(i), natsbridge.Codec[Order](secretCodec{}), natsbridge.TopicOptions{Logger: log.Logger()})
			p := publisher(t, topic, natsbridge.PublisherOptions{})
			err := p.Publish(testCtx(t), tc.v)
			if !errors.Is(err, natsbridge.ErrCodec) || !strings.Contains(err.Error(), secret) {
				t.Errorf("Publish = %v, want ErrCodec with the codec's text", err)
			}
			if err := p.Shutdown(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			if got := log.reported("natsbridge: value not published"); got != 1 {
				t.Fatalf("lines for values not published: %d, want 1:\n%s", got, log.String())
			}
			if strings.Contains(log.String(), secret) {
				t.Errorf("a log line carries the value:\n%s", log.String())
			}
		})
	}
}

func TestPublishAfterShutdown(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	ctx := testCtx(t)
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	err := p.Publish(ctx, Order{ID: 1})
	if !errors.Is(err, natsbridge.ErrClosed) {
		t.Errorf("Publish after Shutdown = %v, want ErrClosed", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `topic "orders"`) || !strings.Contains(msg, "Topic.Publisher") {
		t.Errorf("Publish after Shutdown says %q: want the topic and what to do (make another with Topic.Publisher)", msg)
	}
	if sent, err := p.TryPublish(Order{ID: 1}); sent || !errors.Is(err, natsbridge.ErrClosed) {
		t.Errorf("TryPublish after Shutdown = %v, %v; want false, ErrClosed", sent, err)
	}
	// A topic that is shut down hands out no publisher.
	if err := topic.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := topic.Publisher(natsbridge.PublisherOptions{}); !errors.Is(err, natsbridge.ErrClosed) || !strings.Contains(err.Error(), "NewTopic") {
		t.Errorf("Publisher on a shut down topic = %v, want ErrClosed saying to open the topic again with NewTopic", err)
	}
	if _, err := topic.Watch(ctx, natsbridge.WatchOptions{}); !errors.Is(err, natsbridge.ErrClosed) || !strings.Contains(err.Error(), "Topic.Shutdown") {
		t.Errorf("Watch on a shut down topic = %v, want ErrClosed naming Topic.Shutdown and NewTopic", err)
	}
}

// TestServerGone shuts the server down under a publisher: its window fills,
// Publish honours its context, TryPublish refuses at once; when the server
// is back every value is confirmed once.
func TestServerGone(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, embedded.Options{Dir: dir, Listen: "127.0.0.1:0"})
	url := s.URL()
	_, js := dial(t, url)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	const window = 4
	p := publisher(t, topic, natsbridge.PublisherOptions{Window: window, AckTimeout: 100 * time.Millisecond})
	ctx := testCtx(t)
	for i := 1; i <= 10; i++ {
		if err := p.Publish(ctx, Order{ID: i}); err != nil {
			t.Fatal(err)
		}
	}

	eventually(t, "the first values are confirmed", func() bool { return p.Stats().Confirmed == 10 })
	s.Shutdown()
	for i := 11; i <= 10+window; i++ { // fill the window: no ack can come
		if err := p.Publish(ctx, Order{ID: i}); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	err := p.Publish(short, Order{ID: 99})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Publish with a full window and the server gone = %v, want context.DeadlineExceeded", err)
	}
	if sent, err := p.TryPublish(Order{ID: 99}); sent || err != nil {
		t.Fatalf("TryPublish with a full window = %v, %v; want false, nil", sent, err)
	}
	if st := p.Stats(); st.Refused != 1 || st.Pending != window {
		t.Fatalf("Stats() with the server gone: Refused %d, Pending %d; want 1, %d", st.Refused, st.Pending, window)
	}

	startServer(t, embedded.Options{Dir: dir, Listen: strings.TrimPrefix(url, "nats://")})
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	if st.Published != 10+window || st.Confirmed != st.Published {
		t.Fatalf("after the restart: %s; want all %d confirmed", describe(st), 10+window)
	}
	if got := sorted(storedIDs(t, js, topic)); !cmp.Equal(got, span(1, 10+window)) {
		t.Fatalf("stream holds %v, want 1..%d once each", got, 10+window)
	}
}

// TestShutdownCountsUnconfirmed ends Shutdown's context while acks are
// outstanding: they are counted, not lost.
func TestShutdownCountsUnconfirmed(t *testing.T) {
	s := startServer(t, embedded.Options{Listen: "127.0.0.1:0"})
	_, js := dial(t, s.URL())
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	p := publisher(t, topic, natsbridge.PublisherOptions{Window: 8, AckTimeout: time.Hour})
	ctx := testCtx(t)
	publishN(t, p, 1, 5)
	eventually(t, "the first values are confirmed", func() bool { return p.Stats().Confirmed == 5 })
	s.Shutdown()
	publishN(t, p, 6, 8)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want context.DeadlineExceeded", err)
	}
	st := p.Stats()
	if st.Published != 8 || st.Pending != 0 || st.Confirmed+st.Failed+st.Unconfirmed != 8 || st.Unconfirmed < 3 {
		t.Fatalf("Stats() = %s; want 8 accounted for, at least 3 unconfirmed", describe(st))
	}
}

// TestShutdownAfterAbortNotNil: once a Shutdown's context ended with values
// awaiting their ack, no other Shutdown call (later, or concurrent through
// Topic.Shutdown) reports success: they return ErrUnconfirmed.
func TestShutdownAfterAbortNotNil(t *testing.T) {
	tests := []struct {
		name       string
		concurrent bool
	}{
		{"later", false},
		{"concurrent", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, embedded.Options{Listen: "127.0.0.1:0"})
			_, js := dial(t, s.URL())
			topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
			p := publisher(t, topic, natsbridge.PublisherOptions{Window: 8, AckTimeout: time.Hour})
			publishN(t, p, 1, 2)
			eventually(t, "the first values are confirmed", func() bool { return p.Stats().Confirmed == 2 })
			s.Shutdown()
			publishN(t, p, 3, 5)
			other := make(chan error, 1)
			if tc.concurrent {
				go func() { other <- topic.Shutdown(context.Background()) }()
				// Topic.Shutdown ends only the publishers still the
				// topic's, and one whose own Shutdown has returned is
				// not: wait until it waits in the publisher's Shutdown.
				eventually(t, "Topic.Shutdown waiting for the publisher", func() bool {
					return parkedIn("lifecycle.(*Group).Wait(", "(*Publisher[...]).Shutdown(", "(*Topic[...]).Shutdown(")
				})
			}
			short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			if err := p.Shutdown(short); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Shutdown with a short context = %v, want context.DeadlineExceeded", err)
			}
			if !tc.concurrent {
				other <- p.Shutdown(context.Background())
			}
			var err error
			select {
			case err = <-other:
			case <-testCtx(t).Done():
				t.Fatal("the other Shutdown did not return")
			}
			if !errors.Is(err, natsbridge.ErrUnconfirmed) {
				t.Errorf("the other Shutdown = %v, want ErrUnconfirmed (%s)", err, describe(p.Stats()))
			}
			if st := p.Stats(); st.Unconfirmed != 3 || st.Pending != 0 {
				t.Errorf("Stats() = %s; want 3 unconfirmed", describe(st))
			}
		})
	}
}

// TestPublisherConnectionClosed closes the connection under values in
// flight: the stream stored them, their acks are lost with the connection.
// None is counted as Failed (refused, or out of retries): each is
// Confirmed or Unconfirmed, and Shutdown says so.
func TestPublisherConnectionClosed(t *testing.T) {
	s := startServer(t, embedded.Options{})
	nc, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	p := publisher(t, topic, natsbridge.PublisherOptions{AckTimeout: 500 * time.Millisecond})
	const n = 500
	publishN(t, p, 1, n)
	nc.Close()
	if err := p.Publish(testCtx(t), Order{ID: n + 1}); !errors.Is(err, nats.ErrConnectionClosed) {
		t.Errorf("Publish after the connection closed = %v, want the connection's error", err)
	}
	err := p.Shutdown(testCtx(t))
	st := p.Stats()
	if st.Published != n || st.Failed != 0 || st.Confirmed+st.Unconfirmed != n {
		t.Fatalf("Stats() = %s; want all %d confirmed or unconfirmed, none failed", describe(st), n)
	}
	switch {
	case st.Unconfirmed > 0 && !errors.Is(err, natsbridge.ErrUnconfirmed):
		t.Errorf("Shutdown = %v with %d values unconfirmed, want ErrUnconfirmed", err, st.Unconfirmed)
	case st.Unconfirmed == 0 && err != nil:
		t.Errorf("Shutdown = %v with every value confirmed, want nil", err)
	}
	_, js2 := connect(t, s)
	if stored := len(storedIDs(t, js2, topic)); uint64(stored) < st.Confirmed || uint64(stored) > st.Confirmed+st.Unconfirmed {
		t.Errorf("the stream holds %d values; the publisher confirmed %d and left %d unconfirmed", stored, st.Confirmed, st.Unconfirmed)
	}
	t.Logf("%s", describe(st))
}

// TestPublishToDeletedStream publishes to a topic whose stream was
// deleted: no retry can store the values, and each is counted as Failed at
// once, instead of after a full round of retries, one value after the
// other (about ten seconds each).
func TestPublishToDeletedStream(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	if err := js.DeleteStream(testCtx(t), topic.Stream()); err != nil {
		t.Fatal(err)
	}
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	publishN(t, p, 1, 5)
	// Five full rounds of retries would take close to a minute.
	if err := p.Shutdown(boundedCtx(t, 5*time.Second)); err != nil {
		t.Fatalf("Shutdown = %v (%s), want nil once every value failed", err, describe(p.Stats()))
	}
	// How many sends went out again before the stream's absence was
	// confirmed (a question with a 250ms bound) depends on the machine's
	// load; what does not is that each value failed, well before the
	// rounds of retries its delivery timeout allows.
	st := p.Stats()
	if st.Failed != 5 || st.Confirmed != 0 {
		t.Errorf("Stats() = %s; want 5 failed", describe(st))
	}
	t.Logf("%d sends again before the stream was known gone", st.Retries)
}

func publishN(t testing.TB, p *natsbridge.Publisher[Order], first, last int) {
	t.Helper()
	for i := first; i <= last; i++ {
		if err := p.Publish(context.Background(), Order{ID: i}); err != nil {
			t.Fatalf("Publish(%d): %v", i, err)
		}
	}
}

// TestReconnectsStoreOnceInOrder drops the connection ten times while
// values and acks are on their way: each value is stored once, in the
// order published, whatever was lost and sent again.
func TestReconnectsStoreOnceInOrder(t *testing.T) {
	s := startServer(t, embedded.Options{Listen: "127.0.0.1:0"})
	nc, js := dial(t, s.URL())
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	const batch = 200
	n := 0
	for range 10 {
		publishN(t, p, n+1, n+batch)
		n += batch
		if err := nc.ForceReconnect(); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	if st.Confirmed != uint64(n) {
		t.Fatalf("Stats() = %s; want all %d confirmed", describe(st), n)
	}
	if got := storedIDs(t, js, topic); !cmp.Equal(got, span(1, n)) {
		t.Fatalf("stream does not hold 1..%d once each, in order: %s", n, firstDiff(got, span(1, n)))
	}
	t.Logf("%d values, %d sent again", n, st.Retries)
}

// storedIDs reads the IDs of every order the topic's stream holds, in
// stream order, straight from the stream.
func storedIDs(t testing.TB, js jetstream.JetStream, topic *natsbridge.Topic[Order]) []int {
	t.Helper()
	ctx := testCtx(t)
	st, err := js.Stream(ctx, topic.Stream())
	if err != nil {
		t.Fatal(err)
	}
	state := st.CachedInfo().State
	var out []int
	codec := natsbridge.JSON[Order]()
	for seq := state.FirstSeq; seq <= state.LastSeq && state.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		o, err := codec.Unmarshal(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o.ID)
	}
	return out
}

// TestShutdownAfterGivingUpOnNothing: a Shutdown whose context had ended
// gives up on nothing when every value is confirmed; a later Shutdown
// returns nil, not ErrUnconfirmed. (The first call finds the reaper still
// running, as a rule: it is repeated to catch that.)
func TestShutdownAfterGivingUpOnNothing(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	bad := 0
	const runs = 5
	for range runs {
		p := publisher(t, topic, natsbridge.PublisherOptions{})
		publishN(t, p, 1, 2)
		eventually(t, "confirmed", func() bool { return p.Stats().Confirmed == 2 })
		_ = p.Shutdown(ended)
		err := p.Shutdown(context.Background())
		if st := p.Stats(); err != nil || st.Unconfirmed != 0 {
			bad++
			t.Logf("second Shutdown = %v with %s", err, describe(st))
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d publishers: a later Shutdown did not return nil with every value confirmed", bad, runs)
	}
}

// TestResendAfterLostConnectionAtOnce drops the connection while a burst
// of values awaits its acks, over a link with latency: the publisher sends
// them all again at once on the new connection, so that they are confirmed
// about one round trip later, not one round trip after the other (which
// would take n round trips, and hold Publish back as long, its window
// full).
func TestResendAfterLostConnectionAtOnce(t *testing.T) {
	s := startServer(t, embedded.Options{Listen: "127.0.0.1:0"})
	const delay = 50 * time.Millisecond
	nc, js := dial(t, slowLink(t, strings.TrimPrefix(s.URL(), "nats://"), delay))
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	const n = 200 // one round trip after the other: n*delay = 10s at least
	p := publisher(t, topic, natsbridge.PublisherOptions{Window: n})
	publishN(t, p, 1, n)
	if err := nc.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(boundedCtx(t, 4*time.Second)); err != nil {
		t.Fatalf("Shutdown = %v (%s, %d sent again), want nil within a few round trips", err, describe(p.Stats()), p.Stats().Retries)
	}
	st := p.Stats()
	if st.Retries == 0 || st.Confirmed != n {
		t.Fatalf("Stats() = %s, retries %d; want acks lost with the connection, and all %d confirmed", describe(st), st.Retries, n)
	}
	_, direct := connect(t, s) // no latency
	if got := sorted(storedIDs(t, direct, topic)); !cmp.Equal(got, span(1, n)) {
		t.Fatalf("stream does not hold 1..%d once each: %s", n, firstDiff(got, span(1, n)))
	}
	t.Logf("%d sent again", st.Retries)
}

// bytesCodec sends a []byte as it is, so that a test controls the size of
// an encoding exactly.
type bytesCodec struct{}

func (bytesCodec) Marshal(v []byte) ([]byte, error)      { return v, nil }
func (bytesCodec) Unmarshal(data []byte) ([]byte, error) { return data, nil }

// TestPublishLargestValue: the largest value a publisher accepts is the
// server's max payload less the headers every message carries, 94 bytes
// and the stream's name, as the package doc states; it is stored whole.
// One byte more is ErrTooLarge, refused before sending, with the limit in
// the error.
func TestPublishLargestValue(t *testing.T) {
	const maxPayload = 2048
	s := startServer(t, embedded.Options{MaxPayload: maxPayload})
	_, js := connect(t, s)
	topic := newTopicOf(t, js, "large.values", natsbridge.Codec[[]byte](bytesCodec{}), natsbridge.TopicOptions{})
	limit := maxPayload - 94 - len(topic.Stream())
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	ctx := testCtx(t)
	if err := p.Publish(ctx, make([]byte, limit)); err != nil {
		t.Fatalf("Publish(%d bytes) = %v, want nil: the doc says up to %d fit", limit, err, limit)
	}
	err := p.Publish(ctx, make([]byte, limit+1))
	if !errors.Is(err, natsbridge.ErrTooLarge) || !strings.Contains(err.Error(), fmt.Sprintf("at most %d fit", limit)) {
		t.Fatalf("Publish(%d bytes) = %v, want ErrTooLarge naming the limit %d", limit+1, err, limit)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Confirmed != 1 || st.Invalid != 1 {
		t.Fatalf("Stats() = %s, invalid %d; want 1 confirmed, 1 invalid", describe(st), st.Invalid)
	}
	w := watchTopic(t, topic, natsbridge.WatchOptions{From: 1})
	v, err := w.Next(ctx)
	if err != nil || len(v) != limit {
		t.Fatalf("stored value: %d bytes, %v; want %d bytes", len(v), err, limit)
	}
}

// TestPublisherStatsSnapshot: every snapshot Stats takes while values flow
// from four goroutines keeps its sum (Published = Confirmed + Failed +
// Unconfirmed + Pending) and never shows more Pending than the window.
func TestPublisherStatsSnapshot(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	const window = 8
	p := publisher(t, topic, natsbridge.PublisherOptions{Window: window})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() { publishN(t, p, g*1000+1, g*1000+500) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	snapshots := 0
	for running := true; running; snapshots++ {
		select {
		case <-done:
			running = false
		default:
		}
		st := p.Stats()
		if st.Published != st.Confirmed+st.Failed+st.Unconfirmed+uint64(st.Pending) || st.Pending > window {
			t.Fatalf("snapshot %d: %s; want the sum to hold and Pending ≤ %d", snapshots, describe(st), window)
		}
	}
	if err := p.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d snapshots", snapshots)
}

// TestPublishCancelledCtxConsistent: Publish with an already
// cancelled ctx that carries a span either returns nil and the value is
// stored, or returns an error and it is not: the stream holds exactly the
// values whose Publish returned nil.
func TestPublishCancelledCtxConsistent(t *testing.T) {
	tracer, _ := tracing(t)
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "h2cancel", natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{})
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	var accepted []int
	for i := 1; i <= 100; i++ {
		sctx, sp := tracer.Start(context.Background(), "publish")
		ctx, cancel := context.WithCancel(sctx)
		cancel()
		err := p.Publish(ctx, Order{ID: i})
		sp.End()
		switch {
		case err == nil:
			accepted = append(accepted, i)
		case !errors.Is(err, context.Canceled):
			t.Fatalf("Publish %d: %v", i, err)
		}
	}
	if err := p.Publish(testCtx(t), Order{ID: 1000}); err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	got := take(t, w, len(accepted)+1)
	if want := append(accepted, 1000); !slices.Equal(ids(got), want) {
		t.Fatalf("stored %v, want the accepted %v", ids(got), want)
	}
	t.Logf("%d of 100 Publish calls with a cancelled ctx were accepted", len(accepted))
}

// TestPublishCancelledCtxRefused: the doc says Publish returns
// ctx.Err() if ctx ends first; a ctx cancelled before the call has ended
// first, so no such Publish is accepted.
func TestPublishCancelledCtxRefused(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "h2cancel2", natsbridge.TopicOptions{})
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	accepted := 0
	for i := range 100 {
		if err := p.Publish(ctx, Order{ID: i}); err == nil {
			accepted++
		}
	}
	if accepted > 0 {
		t.Errorf("%d of 100 Publish calls with an already-cancelled ctx returned nil (and were sent)", accepted)
	}
	if err := p.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}
