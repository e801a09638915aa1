package telemetry

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/telemetry/internal/instrument"
)

// Broadcaster registers b's Stats and queues with m as observable
// instruments, under messaging.system "herald" and
// messaging.destination.name name (see the package doc for the list).
// A second registration of a broadcaster under the same name with the
// same meter is refused until the first is unregistered. Unregister the
// registration before or after shutting b down; until then it keeps b
// reachable.
func Broadcaster[T any](m metric.Meter, name string, b *broadcast.Broadcaster[T]) (metric.Registration, error) {
	type snap = instrument.BroadcastSnapshot
	s := instrument.Set{attribute.String(instrument.KeySystem, "herald"), attribute.String(instrument.KeyDestination, name)}
	r := instrument.NewRegistry[snap](m)
	r.Counter(instrument.SentMessages, "{message}", instrument.SentDesc, s.Op("publish"),
		func(x *snap) uint64 { return x.Published })
	r.Counter(instrument.SentMessages, "{message}", instrument.SentDesc,
		s.Op("publish", attribute.String(instrument.KeyError, "incoming_queue_full")),
		func(x *snap) uint64 { return x.DroppedIncoming })
	return instrument.RegisterBroadcast(r, s, fmt.Sprintf("broadcaster %q", name), b)
}
