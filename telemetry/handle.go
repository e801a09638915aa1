package telemetry

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldgo/herald/handle"
	"github.com/heraldgo/herald/telemetry/internal/instrument"
)

// Pool registers p's Stats with m, under messaging.system "herald" and
// messaging.client.id name (the Pool is a client of its source): the
// values it received and the fate of each (handled, dead-lettered,
// abandoned), those it holds by state, retries and panics, keys, pauses,
// and how long the key that has held up its values the longest has (see
// the package doc for the list). A second registration of a Pool under
// the same name with the same meter is refused until the first is
// unregistered.
func Pool[T any, K comparable](m metric.Meter, name string, p *handle.Pool[T, K]) (metric.Registration, error) {
	type snap = handle.Stats[K]
	type count = instrument.Count[snap]
	s := instrument.Set{attribute.String(instrument.KeySystem, "herald"), attribute.String(instrument.KeyClient, name)}
	r := instrument.NewRegistry[snap](m)
	r.Counter("herald.handle.received", "{value}", "Values the Pool read from its source.", s.With(),
		func(x *snap) uint64 { return x.Received })
	const fates = "Values whose fate is final, by herald.handle.fate: handled (the handler returned nil), dead_lettered (given up on), abandoned (left by Shutdown, never marked done)."
	r.Counters("herald.handle.fates", "{value}", fates, s, "herald.handle.fate",
		count{Attr: "handled", Read: func(x *snap) uint64 { return x.Handled }},
		count{Attr: "dead_lettered", Read: func(x *snap) uint64 { return x.DeadLettered }},
		count{Attr: "abandoned", Read: func(x *snap) uint64 { return x.Abandoned }},
	)
	r.Counter("herald.handle.poisoned", "{value}", "Values that could not be decoded (dead-lettered too).", s.With(),
		func(x *snap) uint64 { return x.Poisoned })
	r.Counter("herald.handle.mixed", "{value}", "Values that joined a key holding a value of another partition: a key that does not refine the source's partition key.", s.With(),
		func(x *snap) uint64 { return x.Mixed })
	const held = "Values the Pool holds without a fate yet, by herald.handle.state: in_flight (in a handler), waiting (for a worker or their key's earlier values), backoff (waiting out a retry)."
	for _, st := range []struct {
		attr string
		read func(*snap) int
	}{
		{"in_flight", func(x *snap) int { return x.InFlight }},
		{"waiting", func(x *snap) int { return x.Waiting }},
		{"backoff", func(x *snap) int { return x.Backoff }},
	} {
		r.UpDown("herald.handle.held", "{value}", held, s.With(attribute.String("herald.handle.state", st.attr)), st.read)
	}
	r.Counter("herald.handle.retries", "{attempt}", "Attempts after a failure.", s.With(),
		func(x *snap) uint64 { return x.Retries })
	r.Counter("herald.handle.panics", "{call}", "Handlers that panicked or called runtime.Goexit (each a failure too).", s.Failure("panic"),
		func(x *snap) uint64 { return x.Panics })
	r.UpDown("herald.handle.keys", "{key}", "Keys with values in the Pool.", s.With(),
		func(x *snap) int { return x.Keys })
	poolPauses(r, s)
	return r.Register(fmt.Sprintf("pool %q", name), p.Stats)
}

// poolPauses registers the instruments of a Pool's pauses.
func poolPauses[K comparable](r *instrument.Registry[handle.Stats[K]], s instrument.Set) {
	type snap = handle.Stats[K]
	r.Gauge("herald.handle.paused", "{pause}", "1 while reading is paused: the Pool is full, or its window behind the oldest value without a fate.", s.With(),
		func(x *snap) int {
			if x.Paused {
				return 1
			}
			return 0
		})
	r.Counter("herald.handle.pauses", "{pause}", "Times reading paused.", s.With(),
		func(x *snap) uint64 { return x.Pauses })
	r.Seconds("herald.handle.blocked.age", "How long the key that has held up its values the longest has: since its oldest value's first attempt; 0 if none.",
		s.With(), func(x *snap) float64 {
			if x.Blocked == nil {
				return 0
			}
			return x.Blocked.For.Seconds()
		})
}
