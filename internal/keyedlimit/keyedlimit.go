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
	"math"
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

// bucket is a key's token bucket: golang.org/x/time/rate's Limiter as
// AllowN(t, 1) uses it, without its mutex (the owner locks) and held in
// the cache's entry, so that no key costs an allocation of its own.
// tokens and last are rate's; a bucket is new, full, when its key is
// first seen (see Allow).
type bucket struct {
	tokens float64
	last   time.Time
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
// Allow allocates nothing once a key is stored: a key's first call
// allocates its cache entry, unless it reuses a forgotten key's.
func (b *Buckets[K]) Allow(h uint64, match func(*K) bool, key func() K, now time.Time) bool {
	e, found, _ := b.buckets.GetOrAdd(h, match, key)
	if !found {
		// A new key, or one forgotten (its bucket is not reused): its
		// bucket starts full, as rate.NewLimiter's.
		*e = bucket{tokens: float64(b.burst)}
	}
	return b.take(e, now)
}

// take is rate.Limiter.AllowN(t, 1) on e, step for step, so that a bucket
// answers as rate's would, whatever the limit (FuzzBucketsMatchRate).
func (b *Buckets[K]) take(e *bucket, t time.Time) bool {
	if b.limit == rate.Inf {
		return true
	}
	last := e.last
	if t.Before(last) {
		last = t
	}
	tokens := e.tokens
	if b.limit > 0 {
		tokens += t.Sub(last).Seconds() * float64(b.limit)
	}
	if burst := float64(b.burst); tokens > burst {
		tokens = burst
	}
	tokens--
	if tokens < 0 && wait(b.limit, -tokens) > 0 {
		return false
	}
	if b.burst < 1 {
		return false
	}
	e.last, e.tokens = t, tokens
	return true
}

// wait is rate's durationFromTokens: how long limit takes to make tokens.
func wait(limit rate.Limit, tokens float64) time.Duration {
	if limit <= 0 {
		return rate.InfDuration
	}
	d := tokens / float64(limit) * float64(time.Second)
	if d > float64(math.MaxInt64) {
		return rate.InfDuration
	}
	return time.Duration(d)
}

// Len returns how many keys are kept now.
func (b *Buckets[K]) Len() int { return b.buckets.Len() }

// Evicted returns how many keys were forgotten so far to keep the size.
func (b *Buckets[K]) Evicted() uint64 { return b.buckets.Evicted() }
