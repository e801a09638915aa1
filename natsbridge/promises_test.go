package natsbridge_test

// Each test holds one documented promise of the package at an edge: a
// failing test is a promise broken.

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestFlushAfterTailRemoved: Watcher.Flush returns "once every value the
// stream held when Flush was called is in the watcher's queue, or was
// dropped by its policy, or counted as a gap" also when the values at the
// end of the stream were removed before the watcher read them (a purge, a
// deleted message, MaxAge): no message will carry their sequences, so
// Flush counts them as gaps rather than wait for them.
func TestFlushAfterTailRemoved(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "edge.purge", natsbridge.TopicOptions{})
	publishAll(t, topic, 1, 3)

	stream, err := js.Stream(context.Background(), topic.Stream())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}

	// A watcher resuming at 1, as the package doc teaches after a restart.
	w := watch(t, topic, natsbridge.WatchOptions{From: 1})

	// The stream holds nothing: Flush has nothing to wait for.
	if err := w.Flush(boundedCtx(t, 5*time.Second)); err != nil {
		t.Errorf("Flush on a watcher whose owed values were all removed = %v, want nil", err)
	}
	if got := w.Stats().Gaps; got != 3 {
		t.Errorf("Gaps() = %d after Flush, want 3 (values 1..3 were removed before the watcher read them)", got)
	}
}

// TestFlushAfterLastMessageDeleted is the same with only the last
// message deleted: the watcher handles 1 and 2, and Flush counts 3 as a
// gap.
func TestFlushAfterLastMessageDeleted(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "edge.deleted", natsbridge.TopicOptions{})
	publishAll(t, topic, 1, 3)
	stream, err := js.Stream(context.Background(), topic.Stream())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.DeleteMsg(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	w := watch(t, topic, natsbridge.WatchOptions{From: 1})
	if err := w.Flush(boundedCtx(t, 5*time.Second)); err != nil {
		t.Errorf("Flush after the last message was deleted = %v, want nil (the stream holds 1 and 2)", err)
	}
	if got := ids(take(t, w, 2)); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("values %v, want [1 2]", got)
	}
}

// TestFlushCountsFetchedThenPurged: values the client had read ahead when
// the stream was purged, not yet queued, are counted as gaps by a Flush
// called before the watcher comes to them, and never delivered; the value
// the watcher was already queuing still arrives, once. Every value owed is
// read or counted as a gap, exactly once.
func TestFlushCountsFetchedThenPurged(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	const n, readAhead = 2000, 512
	topic := newTopic(t, js, "edge.fetched", natsbridge.TopicOptions{ReadAhead: readAhead})
	w := watch(t, topic, natsbridge.WatchOptions{QueueLength: 1}) // Block, nobody reads yet
	publishAll(t, topic, 1, n)
	// The first pull fetches readAhead values; the blocked watcher holds
	// far fewer (its queue, its broadcaster's incoming queue).
	var fetched uint64
	eventually(t, "the client read ahead", func() bool {
		fetched = consumerInfo(t, js, topic.Stream()).Delivered.Stream
		return fetched >= readAhead
	})
	stream, err := js.Stream(testCtx(t), topic.Stream())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Purge(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	// Nobody reads: Flush counts the gaps, then waits for room in the
	// queue until its context ends.
	short, cancel := context.WithTimeout(testCtx(t), 500*time.Millisecond)
	defer cancel()
	if err := w.Flush(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush of a full Block watcher nobody reads = %v, want context.DeadlineExceeded", err)
	}
	if w.Stats().Gaps == 0 {
		t.Fatal("Gaps() = 0 after Flush: it did not count the purged values")
	}

	var read atomic.Int64
	got := make(chan []int, 1)
	ctx := testCtx(t)
	go func() {
		var ids []int
		for {
			o, err := w.Next(ctx)
			if err != nil {
				got <- ids
				return
			}
			ids = append(ids, o.ID)
			read.Add(1)
		}
	}()
	if err := w.Flush(ctx); err != nil {
		t.Fatalf("Flush with a reader = %v", err)
	}
	// The value the watcher was queuing may arrive just after Flush.
	eventually(t, "every value read or counted as a gap", func() bool { return uint64(read.Load())+w.Stats().Gaps >= n })
	w.Stop()
	ids := <-got
	if total := uint64(len(ids)) + w.Stats().Gaps; total != n {
		t.Errorf("read %d + gaps %d = %d, want %d (each value read or counted once)", len(ids), w.Stats().Gaps, total, n)
	}
	if diff := cmp.Diff(span(1, len(ids)), ids); diff != "" {
		t.Errorf("values read (-want +got):\n%s", diff)
	}
	if uint64(len(ids)) >= fetched {
		t.Errorf("read %d values, the client had fetched %d: those fetched but not queued when Flush counted the purge were delivered, not counted as gaps", len(ids), fetched)
	}
}

// TestEventsAfterStop: Stop "returns once the watcher's goroutines have
// exited" and "is idempotent". Events after Stop returns a closed channel
// and starts no goroutine, so a second Stop returns at once.
func TestEventsAfterStop(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "edge.events", natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{})
	publishAll(t, topic, 1, 3)
	if err := w.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	w.Stop() // values 1..3 stay queued, readable with Next and All

	ch := w.Events() // documented: closed by Stop
	select {
	case v, ok := <-ch:
		// The pump delivers a queued value on a channel of a stopped
		// watcher; drain nothing more: a caller who took Stop at its word
		// does not read.
		t.Logf("Events() after Stop delivered %v (open=%v)", v, ok)
	case <-boundedCtx(t, 5*time.Second).Done():
		t.Fatal("Events() after Stop neither delivers nor closes")
	}

	stopped := make(chan struct{})
	go func() {
		w.Stop() // idempotent: must return at once
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-boundedCtx(t, 5*time.Second).Done():
		// Release the stuck pump so that the test ends cleanly, and report.
		for range ch {
		}
		<-stopped
		t.Fatal("second Stop after Events() did not return: it waits for a pump goroutine no Stop can end")
	}
}

// TestPublishStalledIsNotAWindowWait: Publish waits while the connection
// cannot take more, not only while its own window is full. When the
// JetStream context's limit of async publishes awaiting their acks
// (WithPublishAsyncMaxPending, shared by every publisher on it; 4000 by
// default) is below the window and the server is unreachable,
// Publish waits (bounded by its context) instead of failing with
// jetstream's ErrTooManyStalledMsgs, which Forward would take as fatal.
func TestPublishStalledIsNotAWindowWait(t *testing.T) {
	s := startServer(t, embedded.Options{Listen: "127.0.0.1:0"})
	_, js := dial(t, s.URL())
	js, err := jetstream.New(js.Conn(), jetstream.WithPublishAsyncMaxPending(4))
	if err != nil {
		t.Fatal(err)
	}
	topic := newTopic(t, js, "edge.stall", natsbridge.TopicOptions{})
	p := publisher(t, topic, natsbridge.PublisherOptions{Window: 64})
	s.Shutdown() // the client reconnects for ever: the server is unreachable

	ctx := boundedCtx(t, 20*time.Second)
	var perr error
	for i := range 8 {
		if perr = p.Publish(ctx, Order{ID: i}); perr != nil {
			break
		}
	}
	sh, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = p.Shutdown(sh)
	if perr != nil && !errors.Is(perr, context.DeadlineExceeded) {
		t.Errorf("Publish with 4 of 64 window places taken, server unreachable = %v; want a wait for room (nil, or ctx.Err())", perr)
	}
	if st := p.Stats(); st.Published+st.Invalid+st.Refused != 4 {
		t.Logf("stats: %+v", st)
	}
}

// TestLiveAfterWatcherEnded: TopicStats.Live "is the number of
// publishers, watchers and mirrors not yet ended", and a watcher ends when
// its stream is deleted (its queued values stay readable, then it closes),
// before anyone calls Stop: it leaves Live then, as a mirror does.
func TestLiveAfterWatcherEnded(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "edge.live", natsbridge.TopicOptions{})
	ctx := testCtx(t)
	w, err := topic.Watch(ctx, natsbridge.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := js.DeleteStream(ctx, topic.Stream()); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, w); len(got) != 0 { // ends once the watcher closed
		t.Fatalf("values %v, want none", got)
	}
	if err := w.Err(); !errors.Is(err, natsbridge.ErrStreamGone) {
		t.Fatalf("Err() = %v, want ErrStreamGone", err)
	}
	if live := topic.Stats().Live; live != 0 {
		t.Errorf("Stats().Live = %d after the only watcher ended (closed, Err %v), want 0", live, w.Err())
	}
}

// TestFlushTailRemovedWhileWaiting: Flush waits for a full Block watcher's
// reader; meanwhile the stream is purged, so that no message will carry
// the sequences the watcher has not read. Flush still returns once the
// reader has taken what the watcher holds, with every other value counted
// as a gap (it waited for the last value the stream had held, which no
// message would ever bring, until its context ended).
func TestFlushTailRemovedWhileWaiting(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "edge.purged.waiting", natsbridge.TopicOptions{ReadAhead: 8, Heartbeat: 500 * time.Millisecond})
	w := watch(t, topic, natsbridge.WatchOptions{QueueLength: 1}) // Block, nobody reads yet
	const n = 500
	publishAll(t, topic, 1, n)
	flushed := make(chan error, 1)
	go func() { flushed <- w.Flush(boundedCtx(t, 10*time.Second)) }()
	eventually(t, "the client read ahead", func() bool { return consumerInfo(t, js, topic.Stream()).Delivered.Stream >= 8 })
	// Purge only once Flush has looked at the stream and waits for the
	// watcher to come to its last value: a Flush that began after the
	// purge would find the tail gone at once, and pass without looking
	// at the stream again while it waits.
	eventually(t, "Flush waiting for the feed", func() bool { return parkedIn("wait.(*Counter).Wait(", ").waitPos(", ").waitPosFor(", ").Flush(") })
	stream, err := js.Stream(testCtx(t), topic.Stream())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Purge(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	var read atomic.Int64
	reading := make(chan struct{})
	go func() {
		defer close(reading)
		for range w.All() {
			read.Add(1)
		}
	}()
	if err := <-flushed; err != nil {
		t.Fatalf("Flush = %v (read %d, gaps %d), want nil once the reader took what the watcher held", err, read.Load(), w.Stats().Gaps)
	}
	// The value the watcher was queuing may arrive just after Flush.
	eventually(t, "every value read or counted as a gap", func() bool { return uint64(read.Load())+w.Stats().Gaps >= n })
	w.Stop()
	<-reading
	if total := uint64(read.Load()) + w.Stats().Gaps; total != n {
		t.Errorf("read %d + gaps %d = %d, want %d", read.Load(), w.Stats().Gaps, total, n)
	}
}
