package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
)

// natsSet is the attribute set of everything on topic t.
func natsSet[T any](t *natsbridge.Topic[T]) set {
	return set{attribute.String(keySystem, "nats"), attribute.String(keyDestination, t.Name())}
}

// count is one counter's value under one attribute value.
type count[S any] struct {
	attr string
	read func(*S) uint64
}

// Publisher registers p, a publisher of topic t, with m: what it sent,
// how its values settled, what is pending and what was retried (see the
// package doc for the list).
func Publisher[T any](m metric.Meter, t *natsbridge.Topic[T], p *natsbridge.Publisher[T]) (metric.Registration, error) {
	type snap = natsbridge.PublisherStats
	s := natsSet(t)
	r := newRegistry[snap](m)
	r.counter(sentMessages, "{message}", sentDesc, s.op("publish"), func(x *snap) uint64 { return x.Published })
	for _, c := range []count[snap]{
		{"window_full", func(x *snap) uint64 { return x.Refused }},
		{"invalid", func(x *snap) uint64 { return x.Invalid }},
	} {
		r.counter(sentMessages, "{message}", sentDesc, s.op("publish", attribute.String(keyError, c.attr)), c.read)
	}
	const settled = "Accepted values settled: confirmed by the stream (no error.type), failed (refused, or not confirmed within the delivery timeout), or unconfirmed (no ack could come any more)."
	r.counter("herald.nats.publisher.settled", "{message}", settled, s.with(), func(x *snap) uint64 { return x.Confirmed })
	for _, c := range []count[snap]{
		{"failed", func(x *snap) uint64 { return x.Failed }},
		{"unconfirmed", func(x *snap) uint64 { return x.Unconfirmed }},
	} {
		r.counter("herald.nats.publisher.settled", "{message}", settled, s.failure(c.attr), c.read)
	}
	r.upDown("herald.nats.publisher.pending", "{message}", "Accepted values not settled yet.", s.with(),
		func(x *snap) int { return x.Pending })
	r.counter("herald.nats.publisher.retries", "{message}", "Sends of a value after its first.", s.with(),
		func(x *snap) uint64 { return x.Retries })
	r.counter("herald.nats.publisher.abandoned", "{message}",
		"Values a Forward took from its broadcaster and could not publish.", s.with(),
		func(x *snap) uint64 { return x.Abandoned })
	return r.register(p.Stats)
}

// watcherSnapshot is what one collection reads of a Watcher.
type watcherSnapshot struct {
	delivered, dropped, gaps, poisoned, redelivered, restarts uint64
	backlog
}

// Watcher registers w, a watcher of topic t, with m: what it received,
// lost, had redelivered, and what waits in its queue (see the package doc
// for the list). name, if not empty, is its messaging.consumer.group.name:
// its WatchOptions.Durable, or a name that tells it from the topic's other
// watchers.
func Watcher[T any](m metric.Meter, name string, t *natsbridge.Topic[T], w *natsbridge.Watcher[T]) (metric.Registration, error) {
	type snap = watcherSnapshot
	s := natsSet(t)
	if name != "" {
		s = append(s, attribute.String(keyGroup, name))
	}
	r := newRegistry[snap](m)
	r.counter(consumedMessages, "{message}", consumedDesc, s.op("receive"), func(x *snap) uint64 { return x.delivered })
	const lost = "Values owed to the watcher and lost, by reason: queue (its FullPolicy, or read but not queued when Stop came), gap (removed by the stream's retention first), poisoned (the codec could not decode them)."
	for _, c := range []count[snap]{
		{"queue", func(x *snap) uint64 { return x.dropped }},
		{"gap", func(x *snap) uint64 { return x.gaps }},
		{"poisoned", func(x *snap) uint64 { return x.poisoned }},
	} {
		r.counter("herald.nats.watcher.dropped", "{message}", lost, s.reason(c.attr), c.read)
	}
	r.counter("herald.nats.watcher.redelivered", "{message}",
		"Values a durable watcher received that the server had delivered before.", s.with(),
		func(x *snap) uint64 { return x.redelivered })
	r.counter("herald.nats.watcher.restarts", "{restart}",
		"Consumers created again, where they stopped, after being lost.", s.with(),
		func(x *snap) uint64 { return x.restarts })
	r.gauge("herald.nats.watcher.queue.depth", "{message}", "Values waiting in the watcher's queue.", s.with(),
		func(x *snap) int { return x.deepest })
	r.seconds("herald.nats.watcher.queue.oldest_age",
		"How long the value in front of the watcher's queue has waited, at least (exact to one collection interval).",
		s.with(), func(x *snap) float64 { return x.oldest })
	a := newAges()
	backlogs := func(dst []broadcast.Backlog) []broadcast.Backlog { return append(dst, w.Backlog()) }
	return r.register(func() snap {
		ws := w.Stats()
		return snap{
			delivered: ws.Delivered, dropped: ws.Dropped, gaps: ws.Gaps, poisoned: ws.Poisoned,
			redelivered: ws.Redelivered, restarts: ws.Restarts, backlog: a.observe(backlogs),
		}
	})
}

// Topic registers t's Stats with m: the values its watchers and mirrors
// lost before reading them, consumers restarted, and what is live.
func Topic[T any](m metric.Meter, t *natsbridge.Topic[T]) (metric.Registration, error) {
	type snap = natsbridge.TopicStats
	s := natsSet(t)
	r := newRegistry[snap](m)
	const lost = "Values lost by the topic's watchers and mirrors before they read them, by reason: gap (removed by the stream's retention first), poisoned (the codec could not decode them)."
	for _, c := range []count[snap]{
		{"gap", func(x *snap) uint64 { return x.Gaps }},
		{"poisoned", func(x *snap) uint64 { return x.Poisoned }},
	} {
		r.counter("herald.nats.topic.dropped", "{message}", lost, s.reason(c.attr), c.read)
	}
	r.counter("herald.nats.topic.restarts", "{restart}",
		"Consumers of the topic's watchers and mirrors created again after being lost.", s.with(),
		func(x *snap) uint64 { return x.Restarts })
	r.upDown("herald.nats.topic.live", "{instance}", "Publishers, watchers and mirrors of the topic not yet ended.",
		s.with(), func(x *snap) int { return x.Live })
	return r.register(t.Stats)
}
