package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
)

// broadcastSnapshot is what one collection reads of a broadcaster.
type broadcastSnapshot struct {
	broadcast.Stats
	incoming int
	backlog
}

// Broadcaster registers b's Stats and queues with m as observable
// instruments, under messaging.system "herald" and
// messaging.destination.name name (see the package doc for the list).
// Unregister the registration before or after shutting b down; until
// then it keeps b reachable.
func Broadcaster[T any](m metric.Meter, name string, b *broadcast.Broadcaster[T]) (metric.Registration, error) {
	s := set{attribute.String(keySystem, "herald"), attribute.String(keyDestination, name)}
	r := newRegistry[broadcastSnapshot](m)
	r.counter(sentMessages, "{message}", sentDesc, s.op("publish"),
		func(x *broadcastSnapshot) uint64 { return x.Published })
	r.counter(sentMessages, "{message}", sentDesc, s.op("publish", attribute.String(keyError, "incoming_queue_full")),
		func(x *broadcastSnapshot) uint64 { return x.DroppedIncoming })
	return registerBroadcast(r, s, b)
}

// Mirror registers the mirror b of topic t (from Topic.Mirror) with m: the
// instruments of Broadcaster, under messaging.system "nats" and
// messaging.destination.name t.Name(), with the values the mirror read
// from the stream as messaging.client.consumed.messages instead of
// messaging.client.sent.messages. Values the stream lost before the mirror
// read them are the topic's (see Topic).
func Mirror[T any](m metric.Meter, t *natsbridge.Topic[T], b *broadcast.Broadcaster[T]) (metric.Registration, error) {
	s := set{attribute.String(keySystem, "nats"), attribute.String(keyDestination, t.Name())}
	r := newRegistry[broadcastSnapshot](m)
	r.counter(consumedMessages, "{message}", consumedDesc, s.op("receive"),
		func(x *broadcastSnapshot) uint64 { return x.Published })
	return registerBroadcast(r, s, b)
}

// registerBroadcast adds the instruments Broadcaster and Mirror share and
// registers r.
func registerBroadcast[T any](r *registry[broadcastSnapshot], s set, b *broadcast.Broadcaster[T]) (metric.Registration, error) {
	r.counter("herald.broadcast.delivered", "{message}",
		"Values placed in a watcher's queue, one per value per watcher.", s.with(),
		func(x *broadcastSnapshot) uint64 { return x.Delivered })
	const dropped = "Values owed to a watcher and lost, by reason: drop_newest, drop_oldest (the watcher's FullPolicy), shutdown (a Shutdown whose context ended)."
	for _, d := range []struct {
		reason string
		read   func(*broadcastSnapshot) uint64
	}{
		{"drop_newest", func(x *broadcastSnapshot) uint64 { return x.DroppedNewest }},
		{"drop_oldest", func(x *broadcastSnapshot) uint64 { return x.DroppedOldest }},
		{"shutdown", func(x *broadcastSnapshot) uint64 { return x.DroppedShutdown }},
	} {
		r.counter("herald.broadcast.dropped", "{message}", dropped, s.reason(d.reason), d.read)
	}
	r.upDown("herald.broadcast.watchers", "{watcher}", "Watchers registered and not yet closed.", s.with(),
		func(x *broadcastSnapshot) int { return x.Watchers })
	r.gauge("herald.broadcast.incoming.depth", "{message}",
		"Values accepted and not yet taken by the distributor.", s.with(),
		func(x *broadcastSnapshot) int { return x.incoming })
	r.gauge("herald.broadcast.queue.depth", "{message}",
		"Values waiting in the deepest watcher's queue.", s.with(),
		func(x *broadcastSnapshot) int { return x.deepest })
	r.seconds("herald.broadcast.queue.oldest_age",
		"How long the oldest value in front of a watcher's queue has waited, at least (exact to one collection interval).",
		s.with(), func(x *broadcastSnapshot) float64 { return x.oldest })
	a := newAges()
	return r.register(func() broadcastSnapshot {
		return broadcastSnapshot{Stats: b.Stats(), incoming: b.Incoming(), backlog: a.observe(b.Backlogs)}
	})
}

// The messaging semantic conventions' counters.
const (
	sentMessages     = "messaging.client.sent.messages"
	sentDesc         = "Messages the producer attempted to send: accepted, or refused with error.type."
	consumedMessages = "messaging.client.consumed.messages"
	consumedDesc     = "Messages delivered to the application."
)
