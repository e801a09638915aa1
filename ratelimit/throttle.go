package ratelimit

import (
	"context"
	"math"
	"time"

	"golang.org/x/time/rate"
)

// Throttle is a single token bucket that paces writes to a sink: at most
// limit per second on average, with bursts of up to burst.
//
// A Throttle is safe for concurrent use and starts no goroutines. Its zero
// value is not usable: create one with NewThrottle.
type Throttle struct {
	l *rate.Limiter
}

// NewThrottle returns a Throttle that starts with a full bucket. The limit
// is as x/time/rate's: rate.Inf lets every write proceed at once. A zero
// burst means 1. It panics if limit is zero (a bucket that never refills:
// pass rate.Inf for no limit), negative or NaN (which would let every
// write proceed, unnoticed), or if burst is negative.
func NewThrottle(limit rate.Limit, burst int) *Throttle {
	switch {
	case limit == 0:
		panic("ratelimit: zero throttle limit (a bucket that never refills; rate.Inf means no limit)")
	case limit < 0:
		panic("ratelimit: negative throttle limit")
	case math.IsNaN(float64(limit)):
		panic("ratelimit: NaN throttle limit")
	case burst < 0:
		panic("ratelimit: negative throttle burst")
	}
	return &Throttle{l: rate.NewLimiter(limit, max(burst, 1))}
}

// Wait blocks until a write may proceed and takes its token. If ctx ends
// first, Wait returns ctx.Err(). If ctx has a deadline that the wait would
// outlast, Wait returns context.DeadlineExceeded at once, without waiting
// and without taking a token, as rate.Limiter.Wait does. Wait panics on a
// nil ctx.
func (t *Throttle) Wait(ctx context.Context) error {
	if ctx == nil {
		panic("ratelimit: nil Context")
	}
	if err := t.l.Wait(ctx); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		// The only other failure, with a burst of at least 1, is a wait
		// that would outlast ctx's deadline.
		return context.DeadlineExceeded
	}
	return nil
}

// AllowAt reports whether a write may proceed at time now, taking a token
// if so. It never blocks.
func (t *Throttle) AllowAt(now time.Time) bool { return t.l.AllowN(now, 1) }
