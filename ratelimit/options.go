package ratelimit

import "golang.org/x/time/rate"

// Defaults of Options: a burst of 25, then one token every five minutes,
// for up to 4096 keys.
const (
	// DefaultBurst is the size of each bucket: 25 tokens.
	DefaultBurst = 25
	// DefaultSize is how many keys a Limiter keeps: 4096.
	DefaultSize = 4096
	// DefaultLimit refills each bucket with one token every five minutes.
	DefaultLimit rate.Limit = 1.0 / 300
)

// Options configures a Limiter. It is passed by value; the zero value gives
// the defaults, field by field.
type Options struct {
	// Limit is how many tokens per second each bucket gains. Zero means
	// DefaultLimit; rate.Inf means every call is allowed. New panics if it
	// is negative or NaN (which would allow every call too, unnoticed).
	Limit rate.Limit
	// Burst is the size of each bucket, full when a key is first seen. Zero
	// means DefaultBurst. New panics if it is negative.
	Burst int
	// Size is how many keys are kept; beyond it the least recently used is
	// forgotten. Zero means DefaultSize. New panics if it is negative.
	Size int
}
