package natsbridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/natstest"
	"github.com/nats-io/nats.go"
)

// TestWatchRequestLostIsMadeAgain: a request NewTopic, Watch or Mirror
// makes that the server never answers (here written into a connection
// then cut; in a cluster, one sent to a node that died a moment ago) is
// made again: the call returns well within a long ctx instead of waiting
// it out, and a watcher reads the stream.
func TestWatchRequestLostIsMadeAgain(t *testing.T) {
	t.Parallel() // it waits out an attempt's timeout, not on the CPU
	s := natstest.StartServer(t, natstest.Options{})
	relay := natstest.NewRelay(t, s.URL())
	nc, js := dial(t, relay.URL())
	topic := newTopic(t, js, "edge.unanswered", natsbridge.TopicOptions{})
	publishAll(t, topic, 1, 3)
	readsStream := func(ctx context.Context, w *natsbridge.Watcher[Order], err error) error {
		if err != nil {
			return err
		}
		defer w.Stop()
		for want := 1; want <= 3; want++ {
			o, err := w.Next(ctx)
			if err != nil {
				return err
			}
			if o.ID != want {
				t.Errorf("read %d, want %d", o.ID, want)
			}
			w.Done(w.Seq())
		}
		return nil
	}
	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"NewTopic", func(ctx context.Context) error {
			other, err := natsbridge.NewTopic(ctx, js, "edge.unanswered.new", natsbridge.JSON[Order](), natsbridge.TopicOptions{Logger: quiet})
			if err == nil {
				err = other.Shutdown(ctx)
			}
			return err
		}},
		{"Watch", func(ctx context.Context) error {
			w, err := topic.Watch(ctx, natsbridge.WatchOptions{From: 1})
			return readsStream(ctx, w, err)
		}},
		{"durable Watch", func(ctx context.Context) error {
			w, err := topic.Watch(ctx, natsbridge.WatchOptions{From: 1, Durable: "unanswered"})
			return readsStream(ctx, w, err)
		}},
		{"Mirror", func(ctx context.Context) error {
			m, err := topic.Mirror(ctx, broadcast.Options{})
			if err == nil {
				_, err = m.Watch()
			}
			return err
		}},
	}
	for _, c := range calls {
		lose(t, relay, nc, c.name, c.call)
	}
}

// lose calls call with a long ctx, loses the first request it writes (the
// relay holds it, then cuts the connection it was written to), and
// checks that call returns, without an error, well before its ctx ends.
func lose(t *testing.T, relay *natstest.Relay, nc *nats.Conn, name string, call func(ctx context.Context) error) {
	t.Helper()
	relay.Hold()
	sent := nc.Stats().OutMsgs
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	result := make(chan error, 1)
	go func() { result <- call(ctx) }()
	eventually(t, name+"'s first request written to the connection", func() bool {
		n, err := nc.Buffered()
		return nc.Stats().OutMsgs > sent && err == nil && n == 0
	})
	lost := time.Now()
	relay.Cut()
	relay.Release()
	select {
	case err := <-result:
		if err != nil {
			t.Fatalf("%s after its request was lost: %v", name, err)
		}
		t.Logf("%s returned %v after its request was lost", name, time.Since(lost).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		cancel()
		<-result
		t.Fatalf("%s still waiting 30s after its request was lost (its ctx: 1 minute)", name)
	}
}
