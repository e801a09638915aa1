package ratelimit

import "golang.org/x/time/rate"

// Defaults, client-go's event spam filter settings.
const (
	// DefaultBurst is the size of each bucket.
	DefaultBurst = 25
	// DefaultSize is how many keys a Limiter keeps.
	DefaultSize = 4096
	// DefaultLimit refills one token every five minutes.
	DefaultLimit rate.Limit = 1.0 / 300
)

// Options configures a Limiter. The zero value gives the defaults.
type Options struct {
	// Limit is how many tokens per second each bucket gains. Zero means
	// DefaultLimit; rate.Inf means every call is allowed. Negative values
	// panic in New.
	Limit rate.Limit
	// Burst is the size of each bucket, full when a key is first seen. Zero
	// means DefaultBurst. Negative values panic in New.
	Burst int
	// Size is how many keys are kept; the least recently used is forgotten
	// beyond it. Zero means DefaultSize. Negative values panic in New.
	Size int
}
