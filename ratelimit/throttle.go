package ratelimit

import (
	"context"
	"time"

	"golang.org/x/time/rate"
)

// Throttle paces writes to a sink: at most limit per second on average,
// with bursts of up to burst. It is safe for concurrent use; its zero value
// is not usable: create one with NewThrottle.
type Throttle struct {
	l *rate.Limiter
}

// NewThrottle returns a Throttle. A zero limit means no limit. It panics on
// a negative limit or burst. A positive limit with a zero burst means a
// burst of 1.
func NewThrottle(limit rate.Limit, burst int) *Throttle {
	if limit < 0 || burst < 0 {
		panic("ratelimit: negative throttle limit or burst")
	}
	if limit == 0 {
		limit = rate.Inf
	}
	return &Throttle{l: rate.NewLimiter(limit, max(burst, 1))}
}

// Wait blocks until a write may proceed. It returns ctx.Err() if ctx ends
// first, or at once if the wait would outlast ctx's deadline.
func (t *Throttle) Wait(ctx context.Context) error {
	if err := t.l.Wait(ctx); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return context.DeadlineExceeded // the wait would outlast the deadline
	}
	return nil
}

// AllowAt reports whether a write may proceed at now, taking a token if so.
func (t *Throttle) AllowAt(now time.Time) bool { return t.l.AllowN(now, 1) }
