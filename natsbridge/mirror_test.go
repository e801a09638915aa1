package natsbridge_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// readAll reads n values from a local watcher.
func readAll(t testing.TB, w *broadcast.Watcher[Order], n int) []int {
	t.Helper()
	ctx := testCtx(t)
	var got []int
	for len(got) < n {
		o, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("Next after %d values: %v", len(got), err)
		}
		got = append(got, o.ID)
	}
	return got
}

// TestMirrorFansOut feeds many local watchers from one consumer: each gets
// what is stored after Mirror, in order, and the server sees one reader.
func TestMirrorFansOut(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	publishAll(t, topic, 1, 5)
	ctx := testCtx(t)
	b, err := topic.Mirror(ctx, broadcast.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ws []*broadcast.Watcher[Order]
	for range 10 {
		w, err := b.Watch()
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	publishAll(t, topic, 6, 105)
	for i, w := range ws {
		if diff := cmp.Diff(span(6, 105), readAll(t, w, 100)); diff != "" {
			t.Fatalf("local watcher %d (-want +got):\n%s", i, diff)
		}
	}
	if n := consumers(t, js, topic.Stream()); n != 1 {
		t.Errorf("%d consumers on the server for 10 local watchers, want 1", n)
	}
	if err := b.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// The feed notices and deletes its consumer.
	eventually(t, "the mirror's consumer is deleted", func() bool { return consumers(t, js, topic.Stream()) == 0 })
	eventually(t, "the topic forgets the mirror", func() bool { return topic.Stats().Live == 0 })
}

// TestMirrorBlockHoldsFeed fills a Block local watcher: the feed stops
// asking the server, and the watcher later gets every value.
func TestMirrorBlockHoldsFeed(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	const readAhead, n = 16, 500
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{ReadAhead: readAhead})
	b, err := topic.Mirror(testCtx(t), broadcast.Options{QueueLength: 4, IncomingQueueLength: 4})
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.Watch()
	if err != nil {
		t.Fatal(err)
	}
	publishAll(t, topic, 1, n)
	const bound = 4 + 2*4 + 1 + readAhead // queue, incoming queue and batch, the feed's, read-ahead
	eventually(t, "the local watcher's queue is full", func() bool { return w.Delivered() == 4 })
	if info := consumerInfo(t, js, topic.Stream()); info.Delivered.Stream > bound {
		t.Fatalf("server delivered up to seq %d, want at most %d while the watcher is full", info.Delivered.Stream, bound)
	}
	if diff := cmp.Diff(span(1, n), readAll(t, w, n)); diff != "" {
		t.Fatalf("values (-want +got):\n%s", diff)
	}
}

// TestMirrorStreamDeleted deletes the stream under a mirror: the feed shuts
// the broadcaster down, so local watchers end after what was queued.
func TestMirrorStreamDeleted(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	ctx := testCtx(t)
	b, err := topic.Mirror(ctx, broadcast.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.Watch()
	if err != nil {
		t.Fatal(err)
	}
	publishAll(t, topic, 1, 3)
	if diff := cmp.Diff(span(1, 3), readAll(t, w, 3)); diff != "" {
		t.Fatalf("values (-want +got):\n%s", diff)
	}
	if err := js.DeleteStream(ctx, topic.Stream()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Next(ctx); !errors.Is(err, broadcast.ErrClosed) {
		t.Fatalf("Next after the stream was deleted = %v, want ErrClosed", err)
	}
	if _, err := topic.Mirror(ctx, broadcast.Options{}); !errors.Is(err, natsbridge.ErrStreamGone) {
		t.Errorf("Mirror on a deleted stream = %v, want ErrStreamGone", err)
	}
}

func TestMirrorBadOptions(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	for _, o := range []broadcast.Options{{QueueLength: -1}, {IncomingQueueLength: -1}, {Full: 42},
		{QueueLength: broadcast.MaxQueueLength + 1}, {IncomingQueueLength: broadcast.MaxQueueLength + 1}} {
		if _, err := topic.Mirror(testCtx(t), o); err == nil {
			t.Errorf("Mirror(%+v) succeeded", o)
		}
	}
}

// TestForward publishes a local broadcaster's values to a topic: a remote
// watcher gets them in order, and stop returns once all are sent.
func TestForward(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	ctx := testCtx(t)
	remote, err := topic.Watch(ctx, natsbridge.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Stop()
	local := broadcast.New[Order](broadcast.Options{})
	defer local.Shutdown(ctx)
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	stop := natsbridge.Forward(local, p)
	for i := 1; i <= 100; i++ {
		if err := local.Publish(ctx, Order{ID: i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := local.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := stop(ctx); err != nil {
		t.Fatalf("stop = %v", err)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Confirmed != 100 || st.Abandoned != 0 {
		t.Fatalf("publisher %s, abandoned %d; want 100 confirmed", describe(st), st.Abandoned)
	}
	if diff := cmp.Diff(span(1, 100), ids(take(t, remote, 100))); diff != "" {
		t.Fatalf("remote values (-want +got):\n%s", diff)
	}
	if err := stop(ctx); err != nil {
		t.Errorf("second stop = %v", err)
	}
}

// TestForwardAbandonCounted stops a forward that cannot publish (the server
// is gone and the window full) with a context that ends: what it holds is
// counted as abandoned.
func TestForwardAbandonCounted(t *testing.T) {
	s := startServer(t, embedded.Options{Listen: "127.0.0.1:0"})
	_, js := dial(t, s.URL())
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	ctx := testCtx(t)
	local := broadcast.New[Order](broadcast.Options{})
	defer local.Shutdown(ctx)
	p := publisher(t, topic, natsbridge.PublisherOptions{Window: 2, AckTimeout: time.Hour})
	stop := natsbridge.Forward(local, p)
	s.Shutdown()
	const n = 10
	for i := 1; i <= n; i++ {
		if err := local.Publish(ctx, Order{ID: i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := local.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := stop(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stop = %v, want context.DeadlineExceeded", err)
	}
	if err := p.Shutdown(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("publisher Shutdown = %v, want context.DeadlineExceeded", err)
	}
	st := p.Stats()
	if st.Published+st.Abandoned != n || st.Abandoned == 0 || st.Unconfirmed+st.Failed+st.Confirmed != st.Published {
		t.Fatalf("publisher %s, abandoned %d; want every one of %d values published or abandoned", describe(st), st.Abandoned, n)
	}
}

// TestTopicShutdown ends everything a topic made.
func TestTopicShutdown(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic, err := natsbridge.NewTopic(context.Background(), js, "orders", natsbridge.JSON[Order](), natsbridge.TopicOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	w, err := topic.Watch(ctx, natsbridge.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := topic.Mirror(ctx, broadcast.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lw, err := b.Watch()
	if err != nil {
		t.Fatal(err)
	}
	publishN(t, p, 1, 10)
	if got := topic.Stats().Live; got != 3 {
		t.Fatalf("Stats().Live = %d, want 3", got)
	}
	if err := topic.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Confirmed != 10 {
		t.Errorf("publisher %s after the topic's Shutdown; want 10 confirmed", describe(st))
	}
	if err := p.Publish(ctx, Order{ID: 11}); !errors.Is(err, natsbridge.ErrClosed) {
		t.Errorf("Publish after the topic's Shutdown = %v, want ErrClosed", err)
	}
	for range w.All() {
	}
	for range lw.All() {
	}
	if _, err := topic.Watch(ctx, natsbridge.WatchOptions{}); !errors.Is(err, natsbridge.ErrClosed) {
		t.Errorf("Watch after Shutdown = %v, want ErrClosed", err)
	}
	if _, err := topic.Mirror(ctx, broadcast.Options{}); !errors.Is(err, natsbridge.ErrClosed) {
		t.Errorf("Mirror after Shutdown = %v, want ErrClosed", err)
	}
	if got := topic.Stats().Live; got != 0 {
		t.Errorf("Stats().Live = %d after Shutdown, want 0", got)
	}
	if n := consumers(t, js, topic.Stream()); n != 0 {
		t.Errorf("%d consumers left on the server", n)
	}
}

// TestTopicShutdownAfterMirrorStreamDeleted: a mirror whose stream was
// deleted while a watcher of its broadcaster was full shut the
// broadcaster down, abandoning the values it could not deliver (counted
// in its Stats). Topic.Shutdown then returns nil: that loss is not its
// own.
func TestTopicShutdownAfterMirrorStreamDeleted(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	ctx := testCtx(t)
	b, err := topic.Mirror(ctx, broadcast.Options{QueueLength: 1})
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.Watch() // never read
	if err != nil {
		t.Fatal(err)
	}
	publishAll(t, topic, 1, 3)
	eventually(t, "the mirror took 3", func() bool { return b.Stats().Published == 3 })
	if err := js.DeleteStream(ctx, topic.Stream()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the mirror ended", func() bool { return topic.Stats().Live == 0 })
	err = topic.Shutdown(context.Background())
	if err != nil {
		t.Errorf("Topic.Shutdown = %v, want nil; broadcaster DroppedShutdown %d, watcher dropped %d", err, b.Stats().DroppedShutdown, w.Dropped())
	}
}
