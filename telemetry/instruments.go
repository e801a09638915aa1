package telemetry

import (
	"context"
	"errors"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Attribute keys. The messaging ones and error.type are OpenTelemetry's
// semantic conventions; the others are herald's.
const (
	keySystem      = "messaging.system"
	keyDestination = "messaging.destination.name"
	keyOperation   = "messaging.operation.name"
	keyGroup       = "messaging.consumer.group.name"
	keyError       = "error.type"
	keyReason      = "herald.drop.reason"
)

// A set builds the attribute sets of one registration, each on top of the
// registration's own.
type set []attribute.KeyValue

// with returns the registration's attributes and kv as one set.
func (s set) with(kv ...attribute.KeyValue) attribute.Set {
	all := append(append(make([]attribute.KeyValue, 0, len(s)+len(kv)), s...), kv...)
	return attribute.NewSet(all...)
}

// reason, failure and op return the attribute sets of a drop reason, an
// error.type and a messaging operation.
func (s set) reason(r string) attribute.Set  { return s.with(attribute.String(keyReason, r)) }
func (s set) failure(e string) attribute.Set { return s.with(attribute.String(keyError, e)) }
func (s set) op(o string, kv ...attribute.KeyValue) attribute.Set {
	return s.with(append([]attribute.KeyValue{attribute.String(keyOperation, o)}, kv...)...)
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

// A registry gathers the instruments of one registration and observes all
// of them in a single callback. Its errors are kept until register.
type registry[S any] struct {
	m     metric.Meter
	err   error
	insts map[string]metric.Observable // by name: one instrument per name
	obs   []observation[S]
}

func newRegistry[S any](m metric.Meter) *registry[S] {
	r := &registry[S]{m: m, insts: make(map[string]metric.Observable)}
	if m == nil {
		r.err = errors.New("telemetry: nil Meter")
	}
	return r
}

// instrument returns the instrument named name, making it with mk the
// first time.
func (r *registry[S]) instrument(name string, mk func() (metric.Observable, error)) metric.Observable {
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

// counter observes read under a as the monotonic counter name.
func (r *registry[S]) counter(name, unit, desc string, a attribute.Set, read func(*S) uint64) {
	inst := r.instrument(name, func() (metric.Observable, error) {
		return r.m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	})
	if inst != nil {
		r.obs = append(r.obs, observation[S]{ints: inst.(metric.Int64Observable), opts: opts(a),
			read: func(s *S) int64 { return clamp(read(s)) }})
	}
}

// upDown observes read under a as the up-down counter name: a count that
// falls as well as rises, whose sum over attributes means something.
func (r *registry[S]) upDown(name, unit, desc string, a attribute.Set, read func(*S) int) {
	inst := r.instrument(name, func() (metric.Observable, error) {
		return r.m.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	})
	if inst != nil {
		r.obs = append(r.obs, observation[S]{ints: inst.(metric.Int64Observable), opts: opts(a),
			read: func(s *S) int64 { return int64(read(s)) }})
	}
}

// gauge observes read under a as the gauge name.
func (r *registry[S]) gauge(name, unit, desc string, a attribute.Set, read func(*S) int) {
	inst := r.instrument(name, func() (metric.Observable, error) {
		return r.m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
	})
	if inst != nil {
		r.obs = append(r.obs, observation[S]{ints: inst.(metric.Int64Observable), opts: opts(a),
			read: func(s *S) int64 { return int64(read(s)) }})
	}
}

// seconds observes read under a as the float gauge name, in seconds.
func (r *registry[S]) seconds(name, desc string, a attribute.Set, read func(*S) float64) {
	inst := r.instrument(name, func() (metric.Observable, error) {
		return r.m.Float64ObservableGauge(name, metric.WithUnit("s"), metric.WithDescription(desc))
	})
	if inst != nil {
		r.obs = append(r.obs, observation[S]{float: inst.(metric.Float64Observable), opts: opts(a), readF: read})
	}
}

// register registers one callback that takes a snapshot and observes every
// instrument from it.
func (r *registry[S]) register(snapshot func() S) (metric.Registration, error) {
	if r.err != nil {
		return nil, r.err
	}
	all := make([]metric.Observable, 0, len(r.insts))
	for _, inst := range r.insts {
		all = append(all, inst)
	}
	obs := r.obs
	return r.m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
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
}

// clamp converts a count to the int64 that instruments take.
func clamp(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}
