package natstelemetry_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
	"github.com/heraldgo/herald/natsbridge/natstest"
	"github.com/heraldgo/herald/telemetry/internal/metrictest"
	"github.com/heraldgo/herald/telemetry/natstelemetry"
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
	meter, reader := metrictest.NewMeter(t)
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
	for _, reg := range []struct {
		what     string
		register func() (metric.Registration, error)
	}{
		{`publisher "api" of topic "orders"`, func() (metric.Registration, error) { return natstelemetry.Publisher(meter, "api", topic, pub) }},
		{`watcher "audit" of topic "orders"`, func() (metric.Registration, error) { return natstelemetry.Watcher(meter, "audit", topic, w) }},
		{`mirror "local" of topic "orders"`, func() (metric.Registration, error) { return natstelemetry.Mirror(meter, "local", topic, mirror) }},
		{`topic "orders"`, func() (metric.Registration, error) { return natstelemetry.Topic(meter, topic) }},
	} {
		r, err := reg.register()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Unregister()
		// A second registration under the same names would double every
		// count below: it is refused.
		if _, err := reg.register(); err == nil || !strings.Contains(err.Error(), reg.what+" is already registered") {
			t.Errorf("second registration of the %s: err = %v, want one naming it", reg.what, err)
		}
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

	got := metrictest.Collect(t, reader, attribute.String("messaging.system", "nats"),
		attribute.String("messaging.destination.name", "orders"))
	p, ms, ts := pub.Stats(), mirror.Stats(), topic.Stats()
	const msg = "{message}"
	metrictest.Check(t, got, map[string]metrictest.Point{
		"messaging.client.sent.messages{messaging.client.id=api,messaging.operation.name=publish}":                        metrictest.Counter(msg, p.Published),
		"messaging.client.sent.messages{error.type=window_full,messaging.client.id=api,messaging.operation.name=publish}": metrictest.Counter(msg, p.Refused),
		"messaging.client.sent.messages{error.type=invalid,messaging.client.id=api,messaging.operation.name=publish}":     metrictest.Counter(msg, p.Invalid),
		"herald.nats.publisher.settled{messaging.client.id=api}":                                                          metrictest.Counter(msg, p.Confirmed),
		"herald.nats.publisher.settled{error.type=failed,messaging.client.id=api}":                                        metrictest.Counter(msg, p.Failed),
		"herald.nats.publisher.settled{error.type=unconfirmed,messaging.client.id=api}":                                   metrictest.Counter(msg, p.Unconfirmed),
		"herald.nats.publisher.pending{messaging.client.id=api}":                                                          metrictest.UpDown(msg, p.Pending),
		"herald.nats.publisher.retries{messaging.client.id=api}":                                                          metrictest.Counter(msg, p.Retries),
		"herald.nats.publisher.abandoned{messaging.client.id=api}":                                                        metrictest.Counter(msg, p.Abandoned),

		"messaging.client.consumed.messages{messaging.client.id=audit,messaging.operation.name=receive}": metrictest.Counter(msg, w.Stats().Delivered),
		"herald.nats.watcher.dropped{herald.drop.reason=queue,messaging.client.id=audit}":                metrictest.Counter(msg, w.Stats().Dropped),
		"herald.nats.watcher.dropped{herald.drop.reason=gap,messaging.client.id=audit}":                  metrictest.Counter(msg, w.Stats().Gaps),
		"herald.nats.watcher.dropped{herald.drop.reason=poisoned,messaging.client.id=audit}":             metrictest.Counter(msg, w.Stats().Poisoned),
		"herald.nats.watcher.redelivered{messaging.client.id=audit}":                                     metrictest.Counter(msg, w.Stats().Redelivered),
		"herald.nats.watcher.restarts{messaging.client.id=audit}":                                        metrictest.Counter("{restart}", w.Stats().Restarts),
		"herald.nats.watcher.queue.depth{messaging.client.id=audit}":                                     metrictest.Gauge(msg, float64(w.Backlog().Queued)),
		"herald.nats.watcher.queue.oldest_age{messaging.client.id=audit}":                                metrictest.Gauge("s", 0), // first seen by this collection

		"messaging.client.consumed.messages{messaging.client.id=local,messaging.operation.name=receive}": metrictest.Counter(msg, ms.Published),
		"herald.broadcast.delivered{messaging.client.id=local}":                                          metrictest.Counter(msg, ms.Delivered),
		"herald.broadcast.dropped{herald.drop.reason=drop_newest,messaging.client.id=local}":             metrictest.Counter(msg, ms.DroppedNewest),
		"herald.broadcast.dropped{herald.drop.reason=drop_oldest,messaging.client.id=local}":             metrictest.Counter(msg, ms.DroppedOldest),
		"herald.broadcast.dropped{herald.drop.reason=shutdown,messaging.client.id=local}":                metrictest.Counter(msg, ms.DroppedShutdown),
		"herald.broadcast.watchers{messaging.client.id=local}":                                           metrictest.UpDown("{watcher}", ms.Watchers),
		"herald.broadcast.incoming.depth{messaging.client.id=local}":                                     metrictest.Gauge(msg, float64(mirror.Incoming())),
		"herald.broadcast.queue.depth{messaging.client.id=local}":                                        metrictest.Gauge(msg, 0), // local read everything
		"herald.broadcast.queue.oldest_age{messaging.client.id=local}":                                   metrictest.Gauge("s", 0),

		"herald.nats.topic.dropped{herald.drop.reason=gap}":      metrictest.Counter(msg, ts.Gaps),
		"herald.nats.topic.dropped{herald.drop.reason=poisoned}": metrictest.Counter(msg, ts.Poisoned),
		"herald.nats.topic.restarts":                             metrictest.Counter("{restart}", ts.Restarts),
		"herald.nats.topic.live":                                 metrictest.UpDown("{instance}", ts.Live),
	})
	if p.Confirmed != n || w.Stats().Delivered != 2 || w.Stats().Dropped != n-2 || ms.Published != n || ts.Live == 0 {
		t.Errorf("publisher %+v, watcher delivered %d dropped %d, mirror %+v, topic %+v: not the state the test means to build",
			p, w.Stats().Delivered, w.Stats().Dropped, ms, ts)
	}
}
