package natsbridge_test

// Races between the ends of a stream, a Publisher or a mirror and the
// calls that read or count across them.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestMirrorStreamDeletedKeepsBacklog: when the stream is deleted, the
// mirror's feed shuts its broadcaster down, and a broadcaster's Shutdown
// delivers every value queued before it. A Block local watcher whose reader
// is behind still receives every value the mirror had taken: the feed's own
// reaction to that Shutdown must not cut it short.
func TestMirrorStreamDeletedKeepsBacklog(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "attack.mirror.deleted", natsbridge.TopicOptions{})
	ctx := testCtx(t)
	b, err := topic.Mirror(ctx, broadcast.Options{QueueLength: 1, IncomingQueueLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.Watch()
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	publishAll(t, topic, 1, n)
	eventually(t, "the mirror took every value", func() bool { return b.Stats().Published == n })
	if err := js.DeleteStream(ctx, topic.Stream()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.Done():
	case <-ctx.Done():
		t.Fatal("the mirror's broadcaster was not shut down after the stream was deleted")
	}
	var got []int
	for {
		v, err := w.Next(ctx)
		if errors.Is(err, broadcast.ErrClosed) {
			break
		}
		if err != nil {
			t.Fatalf("Next after %d values: %v", len(got), err)
		}
		got = append(got, v.ID)
	}
	if diff := cmp.Diff(span(1, n), got); diff != "" {
		t.Errorf("local watcher after the stream was deleted (-want +got):\n%s\nbroadcaster stats %+v", diff, b.Stats())
	}
}

// TestFlushRacesGapsCountedOnce: every value owed to a watcher ends either
// read or counted as a gap, exactly once, while Flush calls (which count a
// removed tail) race with the feed (which counts the gaps it skips) and
// messages are deleted as they are stored, the last one included.
func TestFlushRacesGapsCountedOnce(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "attack.flush.race", natsbridge.TopicOptions{})
	ctx := testCtx(t)
	stream, err := js.Stream(ctx, topic.Stream())
	if err != nil {
		t.Fatal(err)
	}
	w, err := topic.Watch(ctx, natsbridge.WatchOptions{QueueLength: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	const n = 300
	stop := make(chan struct{})
	flushed := make(chan error, 1)
	for range 2 {
		go func() {
			for {
				select {
				case <-stop:
					flushed <- nil
					return
				default:
				}
				if err := w.Flush(ctx); err != nil {
					flushed <- err
					return
				}
			}
		}()
	}
	p := publisher(t, topic, natsbridge.PublisherOptions{Window: 1})
	for i := 1; i <= n; i++ {
		if err := p.Publish(ctx, Order{ID: i}); err != nil {
			t.Fatal(err)
		}
		if i%3 != 0 {
			continue
		}
		// Wait for the ack, so that the value has a sequence to delete:
		// the stream's last, as this publisher is its only one.
		eventually(t, "ack", func() bool { return p.Stats().Confirmed == uint64(i) })
		info, err := stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.DeleteMsg(ctx, info.State.LastSeq); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	close(stop)
	for range 2 {
		if err := <-flushed; err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	var got []int
	for v := range w.All() {
		got = append(got, v.ID)
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("values out of order or repeated at %d: %v", i, got[i-1:i+1])
		}
	}
	if total := uint64(len(got)) + w.Stats().Gaps; total != n {
		t.Errorf("read %d + gaps %d = %d, want %d (each value read or counted once)", len(got), w.Stats().Gaps, total, n)
	}
}

// TestShutdownAbortCountsEveryValue: with the server unreachable and the
// connection's limit of async publishes awaiting acks reached, Publish
// calls wait; a Shutdown whose context ends makes each of them return
// ErrClosed, and every value accepted ends Confirmed, Failed or
// Unconfirmed: none stays Pending once every call has returned.
func TestShutdownAbortCountsEveryValue(t *testing.T) {
	s := startServer(t, embedded.Options{Listen: "127.0.0.1:0"})
	nc, _ := dial(t, s.URL())
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(3))
	if err != nil {
		t.Fatal(err)
	}
	topic := newTopic(t, js, "attack.shutdown.abort", natsbridge.TopicOptions{})
	p := publisher(t, topic, natsbridge.PublisherOptions{Window: 8})
	s.Shutdown()

	ctx := testCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				if err := p.Publish(ctx, Order{ID: g*1000 + i}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	eventually(t, "the connection's limit of async publishes reached", func() bool { return p.Stats().Published >= 3 })
	sh, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(sh); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown with the server unreachable = %v, want DeadlineExceeded", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, natsbridge.ErrClosed) {
			t.Errorf("Publish waiting when Shutdown began = %v, want ErrClosed", err)
		}
	}
	st := p.Stats()
	if st.Pending != 0 || st.Published != st.Confirmed+st.Failed+st.Unconfirmed {
		t.Errorf("after Shutdown and every Publish returned: %s, want nothing pending", describe(st))
	}
}
