// Package natstelemetry registers natsbridge's publishers, watchers,
// mirrors and topics with an OpenTelemetry metric.Meter, as package
// telemetry registers the core's components (the same registry, naming
// rule and refusal of a second registration; telemetry's package doc lists
// the instruments). It is a package of its own so that a program that
// registers only a broadcaster or a correlator compiles nothing of NATS.
//
// Everything on a topic is under messaging.system "nats" and
// messaging.destination.name, the topic's name; a client of the topic (a
// publisher, a watcher, a mirror) is registered under a name of its own,
// messaging.client.id, which tells it from the topic's other clients.
package natstelemetry

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/telemetry/internal/instrument"
)

// topicSet is the attribute set of everything on topic t.
func topicSet[T any](t *natsbridge.Topic[T]) instrument.Set {
	return instrument.Set{attribute.String(instrument.KeySystem, "nats"), attribute.String(instrument.KeyDestination, t.Name())}
}

// clientSet is the attribute set of the client named name on topic t.
func clientSet[T any](t *natsbridge.Topic[T], name string) instrument.Set {
	return append(topicSet(t), attribute.String(instrument.KeyClient, name))
}

// Publisher registers p, a publisher of topic t, with m under
// messaging.client.id name: what it sent, how its values settled, what is
// pending and what was retried. A second registration of a publisher of t
// under the same name with the same meter is refused until the first is
// unregistered.
func Publisher[T any](m metric.Meter, name string, t *natsbridge.Topic[T], p *natsbridge.Publisher[T]) (metric.Registration, error) {
	type snap = natsbridge.PublisherStats
	type count = instrument.Count[snap]
	s := clientSet(t, name)
	r := instrument.NewRegistry[snap](m)
	r.Counter(instrument.SentMessages, "{message}", instrument.SentDesc, s.Op("publish"), func(x *snap) uint64 { return x.Published })
	for _, c := range []count{
		{Attr: "window_full", Read: func(x *snap) uint64 { return x.Refused }},
		{Attr: "invalid", Read: func(x *snap) uint64 { return x.Invalid }},
	} {
		r.Counter(instrument.SentMessages, "{message}", instrument.SentDesc,
			s.Op("publish", attribute.String(instrument.KeyError, c.Attr)), c.Read)
	}
	const settled = "Accepted values settled: confirmed by the stream (no error.type), failed (refused, or not confirmed within the delivery timeout), or unconfirmed (no ack could come any more)."
	r.Counter("herald.nats.publisher.settled", "{message}", settled, s.With(), func(x *snap) uint64 { return x.Confirmed })
	r.Counters("herald.nats.publisher.settled", "{message}", settled, s, instrument.KeyError,
		count{Attr: "failed", Read: func(x *snap) uint64 { return x.Failed }},
		count{Attr: "unconfirmed", Read: func(x *snap) uint64 { return x.Unconfirmed }},
	)
	r.UpDown("herald.nats.publisher.pending", "{message}", "Accepted values not settled yet.", s.With(),
		func(x *snap) int { return x.Pending })
	r.Counter("herald.nats.publisher.retries", "{message}", "Sends of a value after its first.", s.With(),
		func(x *snap) uint64 { return x.Retries })
	r.Counter("herald.nats.publisher.abandoned", "{message}",
		"Values a Forward took from its broadcaster and could not publish.", s.With(),
		func(x *snap) uint64 { return x.Abandoned })
	return r.Register(fmt.Sprintf("publisher %q of topic %q", name, t.Name()), p.Stats)
}

// watcherSnapshot is what one collection reads of a Watcher.
type watcherSnapshot struct {
	delivered, dropped, gaps, poisoned, redelivered, restarts uint64
	instrument.Backlog
}

// Watcher registers w, a watcher of topic t, with m under
// messaging.client.id name (its WatchOptions.Durable, or a name that
// tells it from the topic's other watchers): what it received, lost, had
// redelivered, and what waits in its queue. A second registration of a
// watcher of t under the same name with the same meter is refused until
// the first is unregistered.
func Watcher[T any](m metric.Meter, name string, t *natsbridge.Topic[T], w *natsbridge.Watcher[T]) (metric.Registration, error) {
	type snap = watcherSnapshot
	type count = instrument.Count[snap]
	s := clientSet(t, name)
	r := instrument.NewRegistry[snap](m)
	r.Counter(instrument.ConsumedMessages, "{message}", instrument.ConsumedDesc, s.Op("receive"), func(x *snap) uint64 { return x.delivered })
	const lost = "Values owed to the watcher and lost, by reason: queue (its FullPolicy, or read but not queued when Stop came), gap (removed by the stream's retention first), poisoned (the codec could not decode them)."
	r.Counters("herald.nats.watcher.dropped", "{message}", lost, s, instrument.KeyReason,
		count{Attr: "queue", Read: func(x *snap) uint64 { return x.dropped }},
		count{Attr: "gap", Read: func(x *snap) uint64 { return x.gaps }},
		count{Attr: "poisoned", Read: func(x *snap) uint64 { return x.poisoned }},
	)
	r.Counter("herald.nats.watcher.redelivered", "{message}",
		"Values a durable watcher received that the server had delivered before.", s.With(),
		func(x *snap) uint64 { return x.redelivered })
	r.Counter("herald.nats.watcher.restarts", "{restart}",
		"Consumers created again, where they stopped, after being lost.", s.With(),
		func(x *snap) uint64 { return x.restarts })
	r.Gauge("herald.nats.watcher.queue.depth", "{message}", "Values waiting in the watcher's queue.", s.With(),
		func(x *snap) int { return x.Deepest })
	r.Seconds("herald.nats.watcher.queue.oldest_age",
		"How long the value in front of the watcher's queue has waited, at least (exact to one collection interval).",
		s.With(), func(x *snap) float64 { return x.Oldest })
	a := instrument.NewAges()
	backlogs := func(dst []broadcast.Backlog) []broadcast.Backlog { return append(dst, w.Backlog()) }
	return r.Register(fmt.Sprintf("watcher %q of topic %q", name, t.Name()), func() snap {
		ws := w.Stats()
		return snap{
			delivered: ws.Delivered, dropped: ws.Dropped, gaps: ws.Gaps, poisoned: ws.Poisoned,
			redelivered: ws.Redelivered, restarts: ws.Restarts, Backlog: a.Observe(backlogs),
		}
	})
}

// Mirror registers the mirror b of topic t (from Topic.Mirror) with m
// under messaging.client.id name: the instruments of
// telemetry.Broadcaster, under messaging.system "nats" and
// messaging.destination.name t.Name(), with the values the mirror read
// from the stream as messaging.client.consumed.messages instead of
// messaging.client.sent.messages. Values the stream lost before the mirror
// read them are the topic's (see Topic). A second registration of a
// mirror of t under the same name with the same meter is refused until
// the first is unregistered.
func Mirror[T any](m metric.Meter, name string, t *natsbridge.Topic[T], b *broadcast.Broadcaster[T]) (metric.Registration, error) {
	type snap = instrument.BroadcastSnapshot
	s := clientSet(t, name)
	r := instrument.NewRegistry[snap](m)
	r.Counter(instrument.ConsumedMessages, "{message}", instrument.ConsumedDesc, s.Op("receive"),
		func(x *snap) uint64 { return x.Published })
	return instrument.RegisterBroadcast(r, s, fmt.Sprintf("mirror %q of topic %q", name, t.Name()), b)
}

// Topic registers t's Stats with m: the values its watchers and mirrors
// lost before reading them, consumers restarted, and what is live. A
// second registration of t with the same meter is refused until the
// first is unregistered.
func Topic[T any](m metric.Meter, t *natsbridge.Topic[T]) (metric.Registration, error) {
	type snap = natsbridge.TopicStats
	s := topicSet(t)
	r := instrument.NewRegistry[snap](m)
	const lost = "Values lost by the topic's watchers and mirrors before they read them, by reason: gap (removed by the stream's retention first), poisoned (the codec could not decode them)."
	r.Counters("herald.nats.topic.dropped", "{message}", lost, s, instrument.KeyReason,
		instrument.Count[snap]{Attr: "gap", Read: func(x *snap) uint64 { return x.Gaps }},
		instrument.Count[snap]{Attr: "poisoned", Read: func(x *snap) uint64 { return x.Poisoned }},
	)
	r.Counter("herald.nats.topic.restarts", "{restart}",
		"Consumers of the topic's watchers and mirrors created again after being lost.", s.With(),
		func(x *snap) uint64 { return x.Restarts })
	r.UpDown("herald.nats.topic.live", "{instance}", "Publishers, watchers and mirrors of the topic not yet ended.",
		s.With(), func(x *snap) int { return x.Live })
	return r.Register(fmt.Sprintf("topic %q", t.Name()), t.Stats)
}
