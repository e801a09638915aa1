// Package seam hands herald's internal packages what its public packages
// leave out of their exported APIs on purpose, because only herald's own
// code needs it. A public package sets its hooks here in its init, so a
// caller that imports the public package finds them set.
//
// It holds one seam: the AllowAt of a ratelimit.Limiter for a key whose
// hash the caller computed already (the correlator's spam filter hashes
// each key once, from hashes of the event's fields, for all its caches).
package seam

import "time"

// AllowHashed is a ratelimit.Limiter's AllowAt for a key whose hash is h:
// match reports whether a stored key is the one sought, and key builds
// it, called only to store it. Equal keys must have equal hashes. It is
// safe for concurrent use, as the Limiter is.
type AllowHashed[K any] func(h uint64, match func(*K) bool, key func() K, now time.Time) bool

// allowHashed returns a *ratelimit.Limiter[K]'s AllowHashed[K], as any.
var allowHashed func(limiter any) any

// SetAllowHashed sets the hook of AllowHashedOf. Package ratelimit calls
// it in its init, and no one else.
func SetAllowHashed(f func(limiter any) any) { allowHashed = f }

// AllowHashedOf returns the AllowHashed of limiter, a *ratelimit.Limiter[K]
// made for this use only: its own AllowAt hashes keys another way, so a
// Limiter used through it must not be used through AllowAt. It panics if
// limiter is not a *ratelimit.Limiter[K], or if package ratelimit is not
// linked in (the caller, having made limiter, imports it).
func AllowHashedOf[K any](limiter any) AllowHashed[K] {
	if allowHashed == nil {
		panic("seam: package ratelimit set no hook")
	}
	return allowHashed(limiter).(AllowHashed[K])
}
