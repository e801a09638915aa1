package natsbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestWatchGetsWhatFollows checks the registration rule across processes: a
// watcher receives exactly what is stored after Watch, in order.
func TestWatchGetsWhatFollows(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	publishAll(t, topic, 1, 5)

	w := watch(t, topic, natsbridge.WatchOptions{})
	if w.Start() != 6 || w.Seq() != 5 {
		t.Fatalf("Start() = %d, Seq() = %d before reading; want 6, 5", w.Start(), w.Seq())
	}
	publishAll(t, topic, 6, 15)
	if diff := cmp.Diff(span(6, 15), ids(take(t, w, 10))); diff != "" {
		t.Fatalf("watcher values (-want +got):\n%s", diff)
	}
	if w.Seq() != 15 || w.Stats().Gaps != 0 || w.Stats().Dropped != 0 || w.Stats().Delivered != 10 {
		t.Errorf("Seq %d, Gaps %d, Dropped %d, Delivered %d; want 15, 0, 0, 10", w.Seq(), w.Stats().Gaps, w.Stats().Dropped, w.Stats().Delivered)
	}
}

// TestWatchResume stops a watcher half way and starts another at Seq()+1:
// together they see every value once.
func TestWatchResume(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	ctx := testCtx(t)
	first, err := topic.Watch(ctx, natsbridge.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	publishAll(t, topic, 1, 20)
	got := ids(take(t, first, 8))
	first.Stop()
	resume := first.Seq() + 1

	publishAll(t, topic, 21, 30)
	second, err := topic.Watch(ctx, natsbridge.WatchOptions{From: resume})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Stop()
	if second.Start() != resume {
		t.Fatalf("Start() = %d, want %d", second.Start(), resume)
	}
	got = append(got, ids(take(t, second, 22))...)
	if diff := cmp.Diff(span(1, 30), got); diff != "" {
		t.Fatalf("values over both watchers (-want +got):\n%s", diff)
	}
}

func TestWatchPrefix(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{}, Order{ID: -2}, Order{ID: -1})
	publishAll(t, topic, 1, 3)
	if diff := cmp.Diff([]int{-2, -1, 1, 2, 3}, ids(take(t, w, 5))); diff != "" {
		t.Fatalf("values (-want +got):\n%s", diff)
	}
	if w.Seq() != 3 || w.Stats().Delivered != 3 {
		t.Errorf("Seq %d, Delivered %d; want 3, 3 (a prefix is not a stream value)", w.Seq(), w.Stats().Delivered)
	}
}

func TestWatchBadOptions(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	publishAll(t, topic, 1, 3)
	ctx := testCtx(t)
	if _, err := topic.Watch(ctx, natsbridge.WatchOptions{From: 5}); !errors.Is(err, natsbridge.ErrBadStart) {
		t.Errorf("Watch(From: 5) on a stream ending at 3 = %v, want ErrBadStart", err)
	}
	if _, err := topic.Watch(ctx, natsbridge.WatchOptions{QueueLength: -1}); err == nil {
		t.Error("Watch(QueueLength: -1) succeeded")
	}
	if _, err := topic.Watch(ctx, natsbridge.WatchOptions{Full: broadcast.FullPolicy(42)}); err == nil {
		t.Error("Watch(Full: 42) succeeded")
	}
	if _, err := topic.Watch(ctx, natsbridge.WatchOptions{QueueLength: broadcast.MaxQueueLength + 1}); err == nil {
		t.Error("Watch(QueueLength: MaxQueueLength+1) succeeded")
	}
	w, err := topic.Watch(ctx, natsbridge.WatchOptions{From: 4}) // what comes next
	if err != nil {
		t.Fatalf("Watch(From: 4) = %v", err)
	}
	w.Stop()
}

// TestWatchMaxReadAhead: the largest ReadAhead NewTopic accepts gives a
// working watcher.
func TestWatchMaxReadAhead(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{ReadAhead: natsbridge.MaxReadAhead})
	w := watch(t, topic, natsbridge.WatchOptions{})
	publishAll(t, topic, 1, 3)
	if diff := cmp.Diff(span(1, 3), ids(take(t, w, 3))); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

// TestWatchBlockStopsReading fills a Block watcher that nobody reads: the
// feed stops asking the server, which keeps the backlog, and the reader then
// gets every value in order.
func TestWatchBlockStopsReading(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	const readAhead, queue, n = 16, 4, 1000
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{ReadAhead: readAhead})
	w := watch(t, topic, natsbridge.WatchOptions{QueueLength: queue, Full: broadcast.Block})
	publishAll(t, topic, 1, n)

	// At most this many values leave the server before the reader reads:
	// the queue, broadcast's incoming queue and the batch its distributor
	// holds, the one in the feed's hands and the read-ahead.
	const bound = queue + 2*broadcast.DefaultIncomingQueueLength + 1 + readAhead
	eventually(t, "the watcher's queue is full", func() bool { return w.Stats().Delivered == queue })
	// The stream holds all n (publishAll awaited every ack), so what the
	// server has not delivered is the backlog it keeps. The consumer's
	// NumPending is no measure of it: the server counts the values stored
	// for a consumer on a goroutine of its own, after the acks, and may
	// not have counted them all yet.
	if info := consumerInfo(t, js, topic.Stream()); info.Delivered.Stream > bound {
		t.Fatalf("server delivered up to seq %d; want at most %d delivered", info.Delivered.Stream, bound)
	}
	if diff := cmp.Diff(span(1, n), ids(take(t, w, n))); diff != "" {
		t.Fatalf("values (-want +got):\n%s", diff)
	}
	if w.Stats().Dropped != 0 || w.Stats().Gaps != 0 {
		t.Errorf("Dropped %d, Gaps %d; want 0, 0", w.Stats().Dropped, w.Stats().Gaps)
	}
}

// consumerInfo returns the information of the only consumer on stream.
func consumerInfo(t testing.TB, js jetstream.JetStream, stream string) *jetstream.ConsumerInfo {
	t.Helper()
	st, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	var infos []*jetstream.ConsumerInfo
	l := st.ListConsumers(context.Background())
	for info := range l.Info() {
		infos = append(infos, info)
	}
	if len(infos) != 1 {
		t.Fatalf("%d consumers on %s, want 1", len(infos), stream)
	}
	return infos[0]
}

// TestWatchDropPolicies fills a DropOldest and a DropNewest watcher that
// nobody reads: the feed keeps reading, the queue drops locally and counts.
func TestWatchDropPolicies(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	const queue, n = 8, 100
	ctx := testCtx(t)
	oldest, err := topic.Watch(ctx, natsbridge.WatchOptions{QueueLength: queue, Full: broadcast.DropOldest})
	if err != nil {
		t.Fatal(err)
	}
	newest, err := topic.Watch(ctx, natsbridge.WatchOptions{QueueLength: queue, Full: broadcast.DropNewest})
	if err != nil {
		t.Fatal(err)
	}
	publishAll(t, topic, 1, n)
	for _, w := range []*natsbridge.Watcher[Order]{oldest, newest} {
		if err := w.Flush(ctx); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		w.Stop() // what is queued stays readable
	}
	tests := []struct {
		name string
		w    *natsbridge.Watcher[Order]
		want []int
	}{
		{"DropOldest keeps the freshest", oldest, span(n-queue+1, n)},
		{"DropNewest keeps the first", newest, span(1, queue)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ids(drain(t, tc.w))); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
			if got, want := tc.w.Stats().Dropped, uint64(n-queue); got != want {
				t.Errorf("Dropped() = %d, want %d", got, want)
			}
			if tc.w.Stats().Gaps != 0 {
				t.Errorf("Gaps() = %d, want 0", tc.w.Stats().Gaps)
			}
		})
	}
}

// TestWatchGapsCounted lets retention discard values a Block watcher has not
// read yet: what the watcher reads plus its gaps is everything, exactly.
func TestWatchGapsCounted(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	const n, keep = 300, 50
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{MaxMsgs: keep, ReadAhead: 8})
	w := watch(t, topic, natsbridge.WatchOptions{QueueLength: 4})
	publishAll(t, topic, 1, n)
	var got []int
	ctx := testCtx(t)
	for w.Seq() < n {
		v, err := w.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v.ID)
	}
	var missing uint64
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("value %d after %d: out of order", got[i], got[i-1])
		}
		missing += uint64(got[i] - got[i-1] - 1)
	}
	missing += uint64(got[0] - 1)
	if w.Stats().Gaps == 0 || w.Stats().Gaps != missing || uint64(len(got))+w.Stats().Gaps != n {
		t.Fatalf("read %d values, Gaps() = %d, missing sequences %d; want read + gaps = %d with gaps > 0", len(got), w.Stats().Gaps, missing, n)
	}
	if got := topic.Stats().Gaps; got != w.Stats().Gaps {
		t.Errorf("topic Stats().Gaps = %d, want %d", got, w.Stats().Gaps)
	}
}

// TestWatchFromDiscarded starts a watcher at a sequence retention has
// already removed: the missing values are gaps, not silently skipped.
func TestWatchFromDiscarded(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{MaxMsgs: 10})
	publishAll(t, topic, 1, 30)
	w := watch(t, topic, natsbridge.WatchOptions{From: 1})
	if diff := cmp.Diff(span(21, 30), ids(take(t, w, 10))); diff != "" {
		t.Fatalf("values (-want +got):\n%s", diff)
	}
	if w.Start() != 1 || w.Stats().Gaps != 20 {
		t.Errorf("Start() = %d, Gaps() = %d; want 1, 20", w.Start(), w.Stats().Gaps)
	}
}

// badCodec is JSON, except that it fails to decode an order with ID 13 and
// panics on one with ID 666.
type badCodec struct{ natsbridge.Codec[Order] }

func (c badCodec) Unmarshal(data []byte) (Order, error) {
	o, err := c.Codec.Unmarshal(data)
	switch {
	case err != nil:
		return o, err
	case o.ID == 13:
		return Order{}, errors.New("unlucky")
	case o.ID == 666:
		panic("the codec panics")
	}
	return o, nil
}

func (c badCodec) Marshal(o Order) ([]byte, error) {
	if o.ID == -666 {
		panic("the codec panics")
	}
	if o.ID < 0 {
		return nil, fmt.Errorf("negative ID %d", o.ID)
	}
	return c.Codec.Marshal(o)
}

// secret is what a value holds that no log line may carry.
const secret = "41111111111111111111"

// secretCodec is JSON, except for orders with ID -1, which it fails to
// encode or decode with an error that quotes the order, and -2, which it
// panics with.
type secretCodec struct{}

func (secretCodec) Marshal(o Order) ([]byte, error) {
	switch o.ID {
	case -1:
		return nil, fmt.Errorf("cannot encode %+v", o)
	case -2:
		panic(o)
	}
	return json.Marshal(o)
}

func (secretCodec) Unmarshal(data []byte) (Order, error) {
	var o Order
	if err := json.Unmarshal(data, &o); err != nil {
		return Order{}, err
	}
	switch o.ID {
	case -1:
		return Order{}, fmt.Errorf("cannot decode %+v", o)
	case -2:
		panic(o)
	}
	return o, nil
}

// TestWatchPoison sends messages the codec cannot decode (bad bytes from
// another client, a decode error, a decode panic): each is counted and
// skipped, and the watcher goes on.
func TestWatchPoison(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopicOf(t, js, "orders", badCodec{natsbridge.JSON[Order]()}, natsbridge.TopicOptions{})
	ctx := testCtx(t)
	w, err := topic.Watch(ctx, natsbridge.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	for _, id := range []int{1, 13, 2, 666, 3} {
		if err := p.Publish(ctx, Order{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, topic.Name(), []byte("not json")); err != nil {
		t.Fatal(err)
	}
	publishAll(t, topic, 4, 4)
	if diff := cmp.Diff([]int{1, 2, 3, 4}, ids(take(t, w, 4))); diff != "" {
		t.Fatalf("values (-want +got):\n%s", diff)
	}
	if w.Stats().Poisoned != 3 || w.Seq() != 7 || w.Stats().Gaps != 0 {
		t.Errorf("Poisoned %d, Seq %d, Gaps %d; want 3, 7, 0", w.Stats().Poisoned, w.Seq(), w.Stats().Gaps)
	}
	if got := topic.Stats().Poisoned; got != 3 {
		t.Errorf("topic Stats().Poisoned = %d, want 3", got)
	}
}

// TestWatchPoisonLogCounted: a burst of poison messages is logged in one
// line, and the ones that line did not report are reported, with their
// count, when the watcher stops: the lines account for every message.
func TestWatchPoisonLogCounted(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	var log logRecorder
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{Logger: log.Logger()})
	w := watch(t, topic, natsbridge.WatchOptions{})
	ctx := testCtx(t)
	const poison = 10
	for range poison {
		if _, err := js.Publish(ctx, topic.Name(), []byte("not json")); err != nil {
			t.Fatal(err)
		}
	}
	publishAll(t, topic, 1, 1)
	take(t, w, 1)
	w.Stop()
	if got := w.Stats().Poisoned; got != poison {
		t.Fatalf("Poisoned() = %d, want %d", got, poison)
	}
	if got := log.reported("natsbridge: poison message"); got != poison {
		t.Errorf("log lines account for %d poison messages, want %d:\n%s", got, poison, log.String())
	}
}

// TestWatchPoisonLogsNoValue: a poison message is logged without its
// content, also when the codec's error or panic quotes it.
func TestWatchPoisonLogsNoValue(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	tests := []struct {
		name, payload string
	}{
		{"codec error", `{"id":-1,"item":"` + secret + `"}`},
		{"codec panic", `{"id":-2,"item":"` + secret + `"}`},
		{"encoding/json error quoting the payload", `{"id":` + secret + `}`},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var log logRecorder
			topic := newTopicOf(t, js, "poison.case"+strconv.Itoa(i), natsbridge.Codec[Order](secretCodec{}), natsbridge.TopicOptions{Logger: log.Logger()})
			w, err := topic.Watch(testCtx(t), natsbridge.WatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			if _, err := js.Publish(testCtx(t), topic.Name(), []byte(tc.payload)); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			if got := log.reported("natsbridge: poison message"); got != 1 || w.Stats().Poisoned != 1 {
				t.Fatalf("Poisoned() = %d, poison lines %d; want 1, 1:\n%s", w.Stats().Poisoned, got, log.String())
			}
			if strings.Contains(log.String(), secret) {
				t.Errorf("a log line carries the message's content:\n%s", log.String())
			}
		})
	}
}

// TestWatchStreamDeleted deletes the stream under a watcher: the reader gets
// what was queued, then the end, and Err says why.
func TestWatchStreamDeleted(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{Heartbeat: natsbridge.DefaultHeartbeat})
	ctx := testCtx(t)
	w, err := topic.Watch(ctx, natsbridge.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev, err := topic.Watch(ctx, natsbridge.WatchOptions{Read: broadcast.ReadChannel})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Stop()
	publishAll(t, topic, 1, 3)
	for _, x := range []*natsbridge.Watcher[Order]{w, ev} { // both hold 1..3 before the stream goes
		if err := x.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := js.DeleteStream(ctx, topic.Stream()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(span(1, 3), ids(drain(t, w))); diff != "" {
		t.Fatalf("values (-want +got):\n%s", diff)
	}
	if err := w.Err(); !errors.Is(err, natsbridge.ErrStreamGone) {
		t.Errorf("Err() = %v, want ErrStreamGone", err)
	}
	var got []int
	for o := range ev.Events() {
		got = append(got, o.ID)
	}
	if diff := cmp.Diff(span(1, 3), got); diff != "" {
		t.Errorf("values through Events (-want +got):\n%s", diff)
	}
	if _, err := topic.Watch(ctx, natsbridge.WatchOptions{}); !errors.Is(err, natsbridge.ErrStreamGone) {
		t.Errorf("Watch on a deleted stream = %v, want ErrStreamGone", err)
	}
	if err := w.Flush(ctx); !errors.Is(err, natsbridge.ErrStreamGone) {
		t.Errorf("Flush on a deleted stream = %v, want ErrStreamGone", err)
	}
}

// TestWatchErrAfterStop: Err is nil for a watcher stopped while it ran,
// and keeps saying why a watcher ended by itself after it is stopped.
func TestWatchErrAfterStop(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{Heartbeat: 500 * time.Millisecond})
	running := watch(t, topic, natsbridge.WatchOptions{})
	running.Stop()
	if err := running.Err(); err != nil {
		t.Errorf("Err() after Stop of a running watcher = %v, want nil", err)
	}
	ended := watch(t, topic, natsbridge.WatchOptions{})
	if err := js.DeleteStream(testCtx(t), topic.Stream()); err != nil {
		t.Fatal(err)
	}
	drain(t, ended) // returns once the watcher ended
	ended.Stop()
	if err := ended.Err(); !errors.Is(err, natsbridge.ErrStreamGone) {
		t.Errorf("Err() after the stream was deleted and Stop = %v, want ErrStreamGone", err)
	}
}

// TestWatchStreamReplaced deletes the stream and creates it again (its
// sequence numbers start over): the watcher must not wait for a sequence
// the new stream will reach much later.
func TestWatchStreamReplaced(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{Heartbeat: 500 * time.Millisecond})
	ctx := testCtx(t)
	publishAll(t, topic, 1, 10)
	w, err := topic.Watch(ctx, natsbridge.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := js.DeleteStream(ctx, topic.Stream()); err != nil {
		t.Fatal(err)
	}
	// The server may still be removing the old stream's files.
	var again *natsbridge.Topic[Order]
	eventually(t, "the stream can be created again", func() bool {
		var err error
		again, err = natsbridge.NewTopic(ctx, js, "orders", natsbridge.JSON[Order](), natsbridge.TopicOptions{Logger: quiet})
		return err == nil
	})
	t.Cleanup(func() { _ = again.Shutdown(context.Background()) })
	publishAll(t, again, 1, 3)
	if got := drain(t, w); len(got) != 0 {
		t.Errorf("watcher of the deleted stream read %v", ids(got))
	}
	if err := w.Err(); !errors.Is(err, natsbridge.ErrStreamGone) {
		t.Errorf("Err() = %v, want ErrStreamGone", err)
	}
}

// TestWatchEvents reads a channel watcher through its channel; Stop closes
// it, and what it holds stays readable.
func TestWatchEvents(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{Read: broadcast.ReadChannel})
	publishAll(t, topic, 1, 5)
	if err := w.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	var got []int
	for o := range w.Events() {
		got = append(got, o.ID)
		if len(got) == 3 {
			break
		}
	}
	w.Stop()
	if w.Seq() != 5 {
		t.Errorf("Seq() = %d after five values placed on the channel, want 5", w.Seq())
	}
	for o := range w.Events() {
		got = append(got, o.ID)
	}
	if diff := cmp.Diff([]int{1, 2, 3, 4, 5}, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

// TestWatchStopFromReader stops a full Block watcher from inside its own
// read loop.
func TestWatchStopFromReader(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{QueueLength: 2})
	publishAll(t, topic, 1, 200)
	n := 0
	for range w.All() {
		n++
		if n == 10 {
			w.Stop()
		}
	}
	if n < 10 {
		t.Fatalf("read %d values, want at least 10", n)
	}
	if w.Seq() != uint64(n) {
		t.Errorf("Seq() = %d after %d values", w.Seq(), n)
	}
	eventually(t, "the stopped watcher's consumer is deleted", func() bool { return consumers(t, js, topic.Stream()) == 0 })
	if live := topic.Stats().Live; live != 0 {
		t.Errorf("topic Stats().Live = %d after Stop, want 0", live)
	}
}

// TestWatchLostConnection drops the connection under a watcher while values
// flow (messages in transit are lost with it): the watcher resumes where it
// was and sees every value once, in order.
func TestWatchLostConnection(t *testing.T) {
	s := startServer(t, embedded.Options{Listen: "127.0.0.1:0"})
	_, pubJS := connect(t, s)
	nc, js := dial(t, s.URL())
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{Heartbeat: 500 * time.Millisecond})
	pubTopic := newTopic(t, pubJS, "orders", natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{QueueLength: 1000})
	const n = 2000
	p := publisher(t, pubTopic, natsbridge.PublisherOptions{})
	ctx := testCtx(t)
	for i := 1; i <= n; i++ {
		if err := p.Publish(ctx, Order{ID: i}); err != nil {
			t.Fatal(err)
		}
		if i%500 == 0 {
			if err := nc.ForceReconnect(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	got := ids(take(t, w, n))
	if !slices.Equal(got, span(1, n)) {
		t.Fatalf("values are not 1..%d in order once each: first difference near %v", n, firstDiff(got, span(1, n)))
	}
	if w.Stats().Gaps != 0 {
		t.Errorf("Gaps() = %d, want 0", w.Stats().Gaps)
	}
	t.Logf("consumer restarts: %d", w.Stats().Restarts)
}

// TestWatchConnectionClosed closes the watcher's connection: the watcher
// ends, Err gives the connection's error, and no consumer counts as
// created again.
func TestWatchConnectionClosed(t *testing.T) {
	s := startServer(t, embedded.Options{})
	nc, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{Heartbeat: 500 * time.Millisecond})
	w := watch(t, topic, natsbridge.WatchOptions{})
	nc.Close()
	if got := drain(t, w); len(got) != 0 { // returns once the watcher ended
		t.Fatalf("values %v, want none", ids(got))
	}
	if err := w.Err(); !errors.Is(err, nats.ErrConnectionClosed) {
		t.Errorf("Err() = %v, want the connection's error", err)
	}
	if got, topicGot := w.Stats().Restarts, topic.Stats().Restarts; got != 0 || topicGot != 0 {
		t.Errorf("Restarts() = %d, topic Stats().Restarts = %d after the connection closed; want 0, 0 (no consumer was created again)", got, topicGot)
	}
}

func firstDiff(got, want []int) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("index %d: got %v, want %v", i, got[i:min(i+5, len(got))], want[i:min(i+5, len(want))])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(got), len(want))
}

// TestWatchFlushWaitsForRoom flushes a full Block watcher: Flush waits for
// the reader (bounded by its context), and returns once the reader has made
// room for everything the stream held.
func TestWatchFlushWaitsForRoom(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{ReadAhead: 8})
	ctx := testCtx(t)
	w, err := topic.Watch(ctx, natsbridge.WatchOptions{QueueLength: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	publishAll(t, topic, 1, 200)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := w.Flush(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush of a full Block watcher nobody reads = %v, want context.DeadlineExceeded", err)
	}
	got := make(chan []int, 1)
	go func() {
		var read []int
		for len(read) < 200 {
			o, err := w.Next(ctx)
			if err != nil {
				break // the comparison below reports it
			}
			read = append(read, o.ID)
		}
		got <- read
	}()
	if err := w.Flush(ctx); err != nil {
		t.Fatalf("Flush with a reader = %v", err)
	}
	if diff := cmp.Diff(span(1, 200), <-got); diff != "" {
		t.Fatalf("values (-want +got):\n%s", diff)
	}
}

// TestIdleCheckWaitsForAMessageOnItsWay: values published about a
// heartbeat apart reach an idle watcher just as it checks its consumer;
// the server, which counts a message delivered when it sends it, is then
// ahead of the watcher. That is no loss: the watcher asks again a
// heartbeat later before it takes the message for lost, so no consumer is
// created again and no warning is logged. (Paced by sleeps on purpose:
// the timing is what is tested; it never fails by chance, only when
// the check restarts too soon.)
func TestIdleCheckWaitsForAMessageOnItsWay(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	var log logRecorder
	topic := newTopic(t, js, "orders", natsbridge.TopicOptions{Heartbeat: 500 * time.Millisecond, Logger: log.Logger()})
	ctx := testCtx(t)
	w := watch(t, topic, natsbridge.WatchOptions{QueueLength: 1000})
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	const n = 40
	for i := 1; i <= n; i++ {
		if err := p.Publish(ctx, Order{ID: i}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500*time.Millisecond + time.Duration(i%8)*400*time.Microsecond)
		if topic.Stats().Restarts > 0 {
			t.Fatalf("value %d: a consumer was created again with nothing lost; log:\n%s", i, log.String())
		}
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ids(take(t, w, n)); !slices.Equal(got, span(1, n)) {
		t.Fatalf("values %v, want 1..%d", got, n)
	}
	if r := topic.Stats().Restarts; r != 0 {
		t.Errorf("Restarts = %d with nothing lost; log:\n%s", r, log.String())
	}
}

// TestFlushEndsWithTheWatcher: a Flush waiting for a full Block watcher
// returns ErrClosed when the watcher is stopped, or its topic shut down,
// while it waits: the values it waited for were never queued, so it must
// not report success.
func TestFlushEndsWithTheWatcher(t *testing.T) {
	tests := []struct {
		name string
		end  func(*natsbridge.Topic[Order], *natsbridge.Watcher[Order])
	}{
		{"Stop", func(_ *natsbridge.Topic[Order], w *natsbridge.Watcher[Order]) { w.Stop() }},
		{"topic Shutdown", func(topic *natsbridge.Topic[Order], _ *natsbridge.Watcher[Order]) {
			_ = topic.Shutdown(context.Background())
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, embedded.Options{})
			_, js := connect(t, s)
			topic := newTopic(t, js, "orders", natsbridge.TopicOptions{})
			w := watch(t, topic, natsbridge.WatchOptions{QueueLength: 1, From: 1})
			publishAll(t, topic, 1, 10)
			take(t, w, 3)
			flushed := make(chan error, 1)
			go func() { flushed <- w.Flush(testCtx(t)) }()
			eventually(t, "Flush waits", func() bool {
				return parkedIn("wait.(*Counter).Wait(", ").waitPos(", "natsbridge.(*Watcher") || parkedIn(").waitFlushed(", "natsbridge.(*Watcher")
			})
			tc.end(topic, w)
			if err := <-flushed; !errors.Is(err, natsbridge.ErrClosed) {
				t.Fatalf("Flush when the watcher ended while it waited = %v, want ErrClosed", err)
			}
		})
	}
}
