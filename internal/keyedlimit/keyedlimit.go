// Package keyedlimit is the core of ratelimit.Limiter: token buckets, one
// per key, at most a given number of keys kept, each key found by a hash
// its caller computes. ratelimit.Limiter wraps it with a mutex and a hash
// of its own; herald's correlator calls it directly, under its owner's
// lock, with hashes it computed already from the event's fields (one hash
// per key, for all its caches).
//
// A Buckets is not safe for concurrent use: its owner locks, as
// golang-lru's Cache locks around simplelru.
package keyedlimit

import (
	"time"

	"golang.org/x/time/rate"

	"github.com/heraldgo/herald/internal/hashlru"
)

// Buckets is a set of token buckets, one per key, keeping at most a given
// number of keys: adding one more forgets the least recently used, and a
// forgotten key comes back with a full bucket. Its zero value is not
// usable: create one with New.
type Buckets[K any] struct {
	limit   rate.Limit
	burst   int
	buckets *hashlru.Cache[K, bucket]
}

// bucket is a key's rate.Limiter, created on the key's second call. Until
// then, first holds the time of the first call, which took a token from a
// full bucket: most keys of a flood are seen once, and a Buckets that
// forgets them should not build a rate.Limiter for each.
type bucket struct {
	lim   *rate.Limiter
	first time.Time
}

// New returns an empty Buckets of keys whose buckets hold burst tokens
// and gain limit tokens per second, keeping at most size keys. burst and
// size are at least 1; the limit is taken as it is (the callers check
// what their users give).
func New[K any](limit rate.Limit, burst, size int) *Buckets[K] {
	return &Buckets[K]{limit: limit, burst: burst, buckets: hashlru.New[K, bucket](size)}
}

// Allow takes one token at time now from the bucket of the key whose hash
// is h and which match accepts, and reports whether there was one; key
// builds that key, called only to store it when it is new. Equal keys
// must have equal hashes. A key not seen before, or forgotten, starts
// with a full bucket, which then refills continuously at the limit
// (golang.org/x/time/rate's AllowN(now, 1)).
//
// Allow allocates nothing from a key's third call on: a key's first call
// allocates its cache entry, and its second call its token bucket, which
// a key seen only once never needs.
func (b *Buckets[K]) Allow(h uint64, match func(*K) bool, key func() K, now time.Time) bool {
	e, found, _ := b.buckets.GetOrAdd(h, match, key)
	if !found {
		// A new key, or one forgotten (its bucket is not reused): its
		// bucket starts full, and a full bucket has a token whatever the
		// limit.
		*e = bucket{first: now}
		return true
	}
	if e.lim == nil {
		// The second call: take the first call's token now. A fresh
		// rate.Limiter ends in the same state whenever it is asked.
		e.lim = rate.NewLimiter(b.limit, b.burst)
		e.lim.AllowN(e.first, 1)
	}
	return e.lim.AllowN(now, 1)
}

// Len returns how many keys are kept now.
func (b *Buckets[K]) Len() int { return b.buckets.Len() }

// Evicted returns how many keys were forgotten so far to keep the size.
func (b *Buckets[K]) Evicted() uint64 { return b.buckets.Evicted() }
