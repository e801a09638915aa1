package instrument

import (
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldgo/herald/broadcast"
)

// BroadcastSnapshot is what one collection reads of a broadcaster.
type BroadcastSnapshot struct {
	broadcast.Stats
	Incoming int
	Backlog
}

// RegisterBroadcast adds the instruments that telemetry.Broadcaster and
// natstelemetry.Mirror share to r, and registers it as what.
func RegisterBroadcast[T any](r *Registry[BroadcastSnapshot], s Set, what string, b *broadcast.Broadcaster[T]) (metric.Registration, error) {
	type snap = BroadcastSnapshot
	r.Counter("herald.broadcast.delivered", "{message}",
		"Values placed in a watcher's queue, one per value per watcher.", s.With(),
		func(x *snap) uint64 { return x.Delivered })
	const dropped = "Values owed to a watcher and lost, by reason: drop_newest, drop_oldest (the watcher's FullPolicy), shutdown (a Shutdown whose context ended)."
	r.Counters("herald.broadcast.dropped", "{message}", dropped, s, KeyReason,
		Count[snap]{"drop_newest", func(x *snap) uint64 { return x.DroppedNewest }},
		Count[snap]{"drop_oldest", func(x *snap) uint64 { return x.DroppedOldest }},
		Count[snap]{"shutdown", func(x *snap) uint64 { return x.DroppedShutdown }},
	)
	r.UpDown("herald.broadcast.watchers", "{watcher}", "Watchers registered and not yet closed.", s.With(),
		func(x *snap) int { return x.Watchers })
	r.Gauge("herald.broadcast.incoming.depth", "{message}",
		"Values accepted and not yet taken by the distributor.", s.With(),
		func(x *snap) int { return x.Incoming })
	r.Gauge("herald.broadcast.queue.depth", "{message}",
		"Values waiting in the deepest watcher's queue.", s.With(),
		func(x *snap) int { return x.Deepest })
	r.Seconds("herald.broadcast.queue.oldest_age",
		"How long the oldest value in front of a watcher's queue has waited, at least (exact to one collection interval).",
		s.With(), func(x *snap) float64 { return x.Oldest })
	a := NewAges()
	return r.Register(what, func() snap {
		return snap{Stats: b.Stats(), Incoming: b.Incoming(), Backlog: a.Observe(b.Backlogs)}
	})
}
