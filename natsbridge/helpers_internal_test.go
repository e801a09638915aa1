package natsbridge

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge/embedded"
)

// ordersTopic starts an embedded server and opens the topic "orders" of
// ints on it, logging nothing; the test's cleanup shuts both down. ctx is
// a failsafe bound of a minute.
func ordersTopic(t testing.TB) (ctx context.Context, topic *Topic[int]) {
	t.Helper()
	ctx, topic, _ = ordersTopicOn(t)
	return ctx, topic
}

// ordersTopicOn is ordersTopic, and returns its server too (to stop it).
func ordersTopicOn(t testing.TB) (ctx context.Context, topic *Topic[int], srv *embedded.Server) {
	t.Helper()
	srv, err := embedded.Start(embedded.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown) // registered first, so it runs last: after nc.Close
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	topic, err = NewTopic(ctx, js, "orders", JSON[int](), TopicOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = topic.Shutdown(ctx) })
	return ctx, topic, srv
}

// servedReader publishes the ints 0 to n-1 to topic, and returns the
// durable watcher "d" of it from the first, which the server serves, once
// it has read the first read of them (returned too).
func servedReader(ctx context.Context, t testing.TB, topic *Topic[int], n, read int) (*Watcher[int], []int) {
	t.Helper()
	p := publisher(t, topic, PublisherOptions{})
	for i := range n {
		if err := p.Publish(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := topic.Watch(ctx, WatchOptions{Durable: "d", From: 1})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for range read {
		v, err := w.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	return w, got
}

// publisher returns a new publisher of topic, failing the test if it
// cannot.
func publisher[T any](t testing.TB, topic *Topic[T], o PublisherOptions) *Publisher[T] {
	t.Helper()
	p, err := topic.Publisher(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
