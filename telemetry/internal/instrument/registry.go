// Package instrument holds what telemetry's registrations share: the
// registry that observes one snapshot per collection, the attribute keys
// and naming rule, the claim that refuses a second registration under the
// same names, and the queue ages.
package instrument

import (
	"context"
	"errors"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Attribute keys. The messaging ones and error.type are OpenTelemetry's
// semantic conventions; the others are herald's.
//
// The naming rule: messaging.destination.name is what values flow through
// (a broadcaster's or a correlator's name, a topic's own name);
// messaging.client.id is the name given to one client of a topic (a
// publisher, a watcher, a mirror).
const (
	KeySystem      = "messaging.system"
	KeyDestination = "messaging.destination.name"
	KeyOperation   = "messaging.operation.name"
	KeyClient      = "messaging.client.id"
	KeyError       = "error.type"
	KeyReason      = "herald.drop.reason"
)

// The messaging semantic conventions' counters.
const (
	SentMessages     = "messaging.client.sent.messages"
	SentDesc         = "Messages the producer attempted to send: accepted, or refused with error.type."
	ConsumedMessages = "messaging.client.consumed.messages"
	ConsumedDesc     = "Messages delivered to the application."
)

// A Set builds the attribute sets of one registration, each on top of the
// registration's own.
type Set []attribute.KeyValue

// With returns the registration's attributes and kv as one set.
func (s Set) With(kv ...attribute.KeyValue) attribute.Set {
	all := append(append(make([]attribute.KeyValue, 0, len(s)+len(kv)), s...), kv...)
	return attribute.NewSet(all...)
}

// Reason, Failure and Op return the attribute sets of a drop reason, an
// error.type and a messaging operation.
func (s Set) Reason(r string) attribute.Set  { return s.With(attribute.String(KeyReason, r)) }
func (s Set) Failure(e string) attribute.Set { return s.With(attribute.String(KeyError, e)) }
func (s Set) Op(o string, kv ...attribute.KeyValue) attribute.Set {
	return s.With(append([]attribute.KeyValue{attribute.String(KeyOperation, o)}, kv...)...)
}

// Count is one counter's value under one attribute value.
type Count[S any] struct {
	Attr string
	Read func(*S) uint64
}

// An observation is one instrument observed under one attribute set, its
// value read from the snapshot S that the callback takes once.
type observation[S any] struct {
	ints  metric.Int64Observable   // one of the two is set
	float metric.Float64Observable //
	opts  []metric.ObserveOption   // the attribute set, built once
	read  func(*S) int64
	readF func(*S) float64
}

// A Registry gathers the instruments of one registration and observes all
// of them in a single callback. Its errors are kept until Register.
type Registry[S any] struct {
	m     metric.Meter
	err   error
	insts map[string]metric.Observable // by name: one instrument per name
	obs   []observation[S]
}

// NewRegistry returns a Registry of instruments made with m.
func NewRegistry[S any](m metric.Meter) *Registry[S] {
	r := &Registry[S]{m: m, insts: make(map[string]metric.Observable)}
	if m == nil {
		r.err = errors.New("telemetry: nil Meter")
	}
	return r
}

// instrument returns the instrument named name, making it with mk the
// first time.
func (r *Registry[S]) instrument(name string, mk func() (metric.Observable, error)) metric.Observable {
	if inst, ok := r.insts[name]; ok || r.err != nil {
		return inst
	}
	inst, err := mk()
	if err != nil {
		r.err = errors.Join(r.err, err)
		return nil
	}
	r.insts[name] = inst
	return inst
}

func opts(a attribute.Set) []metric.ObserveOption {
	return []metric.ObserveOption{metric.WithAttributeSet(a)}
}

// Counter observes read under a as the monotonic counter name.
func (r *Registry[S]) Counter(name, unit, desc string, a attribute.Set, read func(*S) uint64) {
	inst := r.instrument(name, func() (metric.Observable, error) {
		return r.m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	})
	if inst != nil {
		r.obs = append(r.obs, observation[S]{ints: inst.(metric.Int64Observable), opts: opts(a),
			read: func(s *S) int64 { return clamp(read(s)) }})
	}
}

// Counters observes each count under s with its attribute value as key's.
func (r *Registry[S]) Counters(name, unit, desc string, s Set, key string, counts ...Count[S]) {
	for _, c := range counts {
		r.Counter(name, unit, desc, s.With(attribute.String(key, c.Attr)), c.Read)
	}
}

// UpDown observes read under a as the up-down counter name: a count that
// falls as well as rises, whose sum over attributes means something.
func (r *Registry[S]) UpDown(name, unit, desc string, a attribute.Set, read func(*S) int) {
	inst := r.instrument(name, func() (metric.Observable, error) {
		return r.m.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	})
	if inst != nil {
		r.obs = append(r.obs, observation[S]{ints: inst.(metric.Int64Observable), opts: opts(a),
			read: func(s *S) int64 { return int64(read(s)) }})
	}
}

// Gauge observes read under a as the gauge name.
func (r *Registry[S]) Gauge(name, unit, desc string, a attribute.Set, read func(*S) int) {
	inst := r.instrument(name, func() (metric.Observable, error) {
		return r.m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
	})
	if inst != nil {
		r.obs = append(r.obs, observation[S]{ints: inst.(metric.Int64Observable), opts: opts(a),
			read: func(s *S) int64 { return int64(read(s)) }})
	}
}

// Seconds observes read under a as the float gauge name, in seconds.
func (r *Registry[S]) Seconds(name, desc string, a attribute.Set, read func(*S) float64) {
	inst := r.instrument(name, func() (metric.Observable, error) {
		return r.m.Float64ObservableGauge(name, metric.WithUnit("s"), metric.WithDescription(desc))
	})
	if inst != nil {
		r.obs = append(r.obs, observation[S]{float: inst.(metric.Float64Observable), opts: opts(a), readF: read})
	}
}

// Register claims what (see Claim) on the registry's meter, then registers
// one callback that takes a snapshot and observes every instrument from
// it. Unregistering the registration releases the claim.
func (r *Registry[S]) Register(what string, snapshot func() S) (metric.Registration, error) {
	if r.err != nil {
		return nil, r.err
	}
	release, err := claim(r.m, what)
	if err != nil {
		return nil, err
	}
	all := make([]metric.Observable, 0, len(r.insts))
	for _, inst := range r.insts {
		all = append(all, inst)
	}
	obs := r.obs
	reg, err := r.m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := snapshot()
		for i := range obs {
			if e := &obs[i]; e.ints != nil {
				o.ObserveInt64(e.ints, e.read(&s), e.opts...)
			} else {
				o.ObserveFloat64(e.float, e.readF(&s), e.opts...)
			}
		}
		return nil
	}, all...)
	if err != nil {
		release()
		return nil, err
	}
	return &registration{inner: reg, release: release}, nil
}

// clamp converts a count to the int64 that instruments take.
func clamp(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}
