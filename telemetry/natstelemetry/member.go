package natstelemetry

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/telemetry/internal/instrument"
)

// Member registers mem, a member of a consumer group of the partitioned
// topic pt, with m, under messaging.destination.name pt.Name(),
// messaging.consumer.group.name its group and messaging.client.id its
// name: the partitions it reads and the live members it counts, its
// rebalances and hand-overs (and how long the last took), and what its
// partitions' watchers counted (redelivered, handed back, lost). A second
// registration of a member of pt under the same group and name with the
// same meter is refused until the first is unregistered.
func Member[T any](m metric.Meter, pt *natsbridge.Partitioned[T], mem *natsbridge.Member[T]) (metric.Registration, error) {
	type snap = natsbridge.MemberStats
	type count = instrument.Count[snap]
	s := instrument.Set{
		attribute.String(instrument.KeySystem, "nats"), attribute.String(instrument.KeyDestination, pt.Name()),
		attribute.String(keyGroup, mem.Group()), attribute.String(instrument.KeyClient, mem.Name()),
	}
	r := instrument.NewRegistry[snap](m)
	r.Gauge("herald.nats.member.partitions", "{partition}", "Partitions the member reads.", s.With(),
		func(x *snap) int { return len(x.Partitions) })
	r.Gauge("herald.nats.member.members", "{member}", "Live members of the group, as the member counted them last.", s.With(),
		func(x *snap) int { return x.Members })
	r.Counter("herald.nats.member.rebalances", "{rebalance}", "Changes of the partitions the member reads.", s.With(),
		func(x *snap) uint64 { return x.Rebalances })
	r.Counter("herald.nats.member.handovers", "{partition}", "Partitions the member handed over to another.", s.With(),
		func(x *snap) uint64 { return x.Handovers })
	r.Seconds("herald.nats.member.handover.duration", "How long the last hand-over took: from its Stop to the handlers' finishing what they held.",
		s.With(), func(x *snap) float64 { return x.HandoverTime.Seconds() })
	r.Counter("herald.nats.member.redelivered", "{message}",
		"Values handed to the member that a member before it may have handed out too (after a takeover).", s.With(),
		func(x *snap) uint64 { return x.Redelivered })
	r.Counter("herald.nats.member.handed_back", "{message}",
		"Values fetched and not handed out when a partition was handed over: the next owner reads them.", s.With(),
		func(x *snap) uint64 { return x.HandedBack })
	const lost = "Values of the member's partitions lost before it read them, by reason: gap (removed by the stream's retention first), poisoned (the codec could not decode them)."
	r.Counters("herald.nats.member.dropped", "{message}", lost, s, instrument.KeyReason,
		count{Attr: "gap", Read: func(x *snap) uint64 { return x.Gaps }},
		count{Attr: "poisoned", Read: func(x *snap) uint64 { return x.Poisoned }},
	)
	return r.Register(fmt.Sprintf("member %q of group %q of topic %q", mem.Name(), mem.Group(), pt.Name()), mem.Stats)
}

// keyGroup is OpenTelemetry's attribute for a consumer group.
const keyGroup = "messaging.consumer.group.name"
