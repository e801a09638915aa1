package hashlru

import (
	"time"

	"golang.org/x/time/rate"
)

// Limiter is a token bucket per key, for keys whose hash the caller
// computes, at most size keys: adding one more forgets the least recently
// used, and a forgotten key comes back with a full bucket. Its zero value
// is not usable: create one with NewLimiter.
type Limiter[K any] struct {
	limit   rate.Limit
	burst   int
	buckets *Cache[K, bucket]
}

// bucket is a key's rate.Limiter, created on the key's second call. Until
// then, first holds the time of the first call, which took a token from a
// full bucket: most keys of a flood are seen once, and a Limiter that
// forgets them should not build a rate.Limiter for each.
type bucket struct {
	lim   *rate.Limiter
	first time.Time
}

// NewLimiter returns a Limiter whose buckets hold burst tokens and refill
// at limit tokens per second, for at most size keys. It panics if burst or
// size is below 1.
func NewLimiter[K any](limit rate.Limit, burst, size int) *Limiter[K] {
	if burst < 1 {
		panic("hashlru: burst must be positive")
	}
	return &Limiter[K]{limit: limit, burst: burst, buckets: New[K, bucket](size)}
}

// AllowAt takes one token at time now from the bucket of the key whose
// hash is h and which match accepts (key builds it, to store it when it
// is new), and reports whether there was one: rate.Limiter's AllowN(now,
// 1) on a bucket that starts full.
func (l *Limiter[K]) AllowAt(h uint64, match func(*K) bool, key func() K, now time.Time) bool {
	b, found, _ := l.buckets.GetOrAdd(h, match, key)
	if !found {
		// A new key, or one forgotten (its bucket is not reused): its
		// bucket starts full, and a full bucket has a token whatever the
		// limit.
		*b = bucket{first: now}
		return true
	}
	if b.lim == nil {
		// The second call: take the first call's token now. A fresh
		// rate.Limiter ends in the same state whenever it is asked.
		b.lim = rate.NewLimiter(l.limit, l.burst)
		b.lim.AllowN(b.first, 1)
	}
	return b.lim.AllowN(now, 1)
}

// Len returns the number of keys held.
func (l *Limiter[K]) Len() int { return l.buckets.Len() }

// Evicted returns how many keys were forgotten to make room.
func (l *Limiter[K]) Evicted() uint64 { return l.buckets.Evicted() }
