package instrument

import (
	"fmt"
	"reflect"
	"sync"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"
)

// Two registrations with the same instruments and attributes on one meter
// would each observe their points, and the SDK sums the two: every count
// reported twice. A claim names what a registration observes (a kind and
// its names, as the error shows them); one meter takes each at most once
// until its registration is unregistered.

// claims holds the claims of every meter, by meter and what.
var claims struct {
	mu    sync.Mutex
	taken map[claimKey]bool
}

type claimKey struct {
	meter metric.Meter
	what  string
}

// claim takes what on m and returns the function that gives it back. A
// meter whose type cannot be compared (no meter of OpenTelemetry's is
// such) cannot be told from another, and is not checked.
func claim(m metric.Meter, what string) (release func(), err error) {
	if !reflect.TypeOf(m).Comparable() {
		return func() {}, nil
	}
	k := claimKey{m, what}
	claims.mu.Lock()
	defer claims.mu.Unlock()
	if claims.taken[k] {
		return nil, fmt.Errorf("telemetry: %s is already registered with this meter, and a second registration would report every count twice: unregister the first, or give this one another name", what)
	}
	if claims.taken == nil {
		claims.taken = make(map[claimKey]bool)
	}
	claims.taken[k] = true
	return func() {
		claims.mu.Lock()
		defer claims.mu.Unlock()
		delete(claims.taken, k)
	}, nil
}

// A registration ends a callback and gives its claim back, once.
type registration struct {
	embedded.Registration
	inner   metric.Registration
	release func()
	once    sync.Once
}

// Unregister ends the callback; the claim is given back even if the SDK
// reports an error, so that the component can be registered again.
func (r *registration) Unregister() error {
	err := r.inner.Unregister()
	r.once.Do(r.release)
	return err
}
