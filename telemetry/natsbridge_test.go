package telemetry_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
	"github.com/heraldgo/herald/natsbridge/natstest"
	"github.com/heraldgo/herald/telemetry"
)

// newTopic opens the topic "orders" on a server of the test's own.
func newTopic(t *testing.T) *natsbridge.Topic[int] {
	srv := natstest.Embedded(t, embedded.Options{})
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
	defer cancel()
	topic, err := natsbridge.NewTopic(ctx, js, "orders", natsbridge.JSON[int](), natsbridge.TopicOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = topic.Shutdown(context.Background()) })
	return topic
}

// TestNATS reads every instrument of a publisher, a watcher that drops, a
// mirror and their topic, and checks each against their counters.
func TestNATS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	meter, reader := newMeter(t)
	topic := newTopic(t)
	w, err := topic.Watch(ctx, natsbridge.WatchOptions{QueueLength: 2, Full: broadcast.DropNewest})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	mirror, err := topic.Mirror(ctx, broadcast.Options{})
	if err != nil {
		t.Fatal(err)
	}
	local, _ := mirror.Watch()
	defer local.Stop()
	pub, err := topic.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, reg := range []func() (metric.Registration, error){
		func() (metric.Registration, error) { return telemetry.Publisher(meter, topic, pub) },
		func() (metric.Registration, error) { return telemetry.Watcher(meter, "audit", topic, w) },
		func() (metric.Registration, error) { return telemetry.Mirror(meter, topic, mirror) },
		func() (metric.Registration, error) { return telemetry.Topic(meter, topic) },
	} {
		r, err := reg()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Unregister()
	}

	const n = 5
	for v := range n {
		if err := pub.Publish(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Shutdown(ctx); err != nil { // every value confirmed
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil { // every value queued or dropped
		t.Fatal(err)
	}
	for range n { // the mirror has fed every value
		if _, err := local.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}

	got := collect(t, reader, attribute.String("messaging.system", "nats"),
		attribute.String("messaging.destination.name", "orders"))
	p, ms, ts := pub.Stats(), mirror.Stats(), topic.Stats()
	const msg = "{message}"
	check(t, got, map[string]point{
		"messaging.client.sent.messages{messaging.operation.name=publish}":                        counter(msg, p.Published),
		"messaging.client.sent.messages{error.type=window_full,messaging.operation.name=publish}": counter(msg, p.Refused),
		"messaging.client.sent.messages{error.type=invalid,messaging.operation.name=publish}":     counter(msg, p.Invalid),
		"herald.nats.publisher.settled":                         counter(msg, p.Confirmed),
		"herald.nats.publisher.settled{error.type=failed}":      counter(msg, p.Failed),
		"herald.nats.publisher.settled{error.type=unconfirmed}": counter(msg, p.Unconfirmed),
		"herald.nats.publisher.pending":                         updown(msg, p.Pending),
		"herald.nats.publisher.retries":                         counter(msg, p.Retries),
		"herald.nats.publisher.abandoned":                       counter(msg, p.Abandoned),

		"messaging.client.consumed.messages{messaging.consumer.group.name=audit,messaging.operation.name=receive}": counter(msg, w.Stats().Delivered),
		"herald.nats.watcher.dropped{herald.drop.reason=queue,messaging.consumer.group.name=audit}":                counter(msg, w.Stats().Dropped),
		"herald.nats.watcher.dropped{herald.drop.reason=gap,messaging.consumer.group.name=audit}":                  counter(msg, w.Stats().Gaps),
		"herald.nats.watcher.dropped{herald.drop.reason=poisoned,messaging.consumer.group.name=audit}":             counter(msg, w.Stats().Poisoned),
		"herald.nats.watcher.redelivered{messaging.consumer.group.name=audit}":                                     counter(msg, w.Stats().Redelivered),
		"herald.nats.watcher.restarts{messaging.consumer.group.name=audit}":                                        counter("{restart}", w.Stats().Restarts),
		"herald.nats.watcher.queue.depth{messaging.consumer.group.name=audit}":                                     gauge(msg, float64(w.Backlog().Queued)),
		"herald.nats.watcher.queue.oldest_age{messaging.consumer.group.name=audit}":                                gauge("s", 0), // first seen by this collection

		"messaging.client.consumed.messages{messaging.operation.name=receive}": counter(msg, ms.Published),
		"herald.broadcast.delivered":                               counter(msg, ms.Delivered),
		"herald.broadcast.dropped{herald.drop.reason=drop_newest}": counter(msg, ms.DroppedNewest),
		"herald.broadcast.dropped{herald.drop.reason=drop_oldest}": counter(msg, ms.DroppedOldest),
		"herald.broadcast.dropped{herald.drop.reason=shutdown}":    counter(msg, ms.DroppedShutdown),
		"herald.broadcast.watchers":                                updown("{watcher}", ms.Watchers),
		"herald.broadcast.incoming.depth":                          gauge(msg, float64(mirror.Incoming())),
		"herald.broadcast.queue.depth":                             gauge(msg, 0), // local read everything
		"herald.broadcast.queue.oldest_age":                        gauge("s", 0),

		"herald.nats.topic.dropped{herald.drop.reason=gap}":      counter(msg, ts.Gaps),
		"herald.nats.topic.dropped{herald.drop.reason=poisoned}": counter(msg, ts.Poisoned),
		"herald.nats.topic.restarts":                             counter("{restart}", ts.Restarts),
		"herald.nats.topic.live":                                 updown("{instance}", ts.Live),
	})
	if p.Confirmed != n || w.Stats().Delivered != 2 || w.Stats().Dropped != n-2 || ms.Published != n || ts.Live == 0 {
		t.Errorf("publisher %+v, watcher delivered %d dropped %d, mirror %+v, topic %+v: not the state the test means to build",
			p, w.Stats().Delivered, w.Stats().Dropped, ms, ts)
	}
}
