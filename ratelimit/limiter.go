package ratelimit

import (
	"hash/maphash"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/heraldgo/herald/internal/lru"
)

// Limiter is a set of token buckets, one per key, keeping at most
// Options.Size keys: adding one more forgets the least recently used, and a
// forgotten key comes back with a full bucket.
//
// A Limiter is safe for concurrent use and starts no goroutines. Its zero
// value is not usable: create one with New.
type Limiter[K comparable] struct {
	limit rate.Limit
	burst int
	seed  maphash.Seed // hashes keys for AllowAt

	mu      sync.Mutex // guards buckets
	buckets *lru.Cache[K, *rate.Limiter]
}

// New returns a Limiter configured by opts, whose zero fields take the
// defaults. It panics if a field of opts is negative: that is a programming
// error.
func New[K comparable](opts Options) *Limiter[K] {
	switch {
	case opts.Limit < 0:
		panic("ratelimit: negative Options.Limit")
	case opts.Burst < 0:
		panic("ratelimit: negative Options.Burst")
	case opts.Size < 0:
		panic("ratelimit: negative Options.Size")
	}
	if opts.Limit == 0 {
		opts.Limit = DefaultLimit
	}
	if opts.Burst == 0 {
		opts.Burst = DefaultBurst
	}
	if opts.Size == 0 {
		opts.Size = DefaultSize
	}
	return &Limiter[K]{
		limit:   opts.Limit,
		burst:   opts.Burst,
		seed:    maphash.MakeSeed(),
		buckets: lru.New[K, *rate.Limiter](opts.Size),
	}
}

// AllowAt takes one token from key's bucket at time now and reports whether
// there was one. A key not seen before, or forgotten, starts with a full
// bucket, which then refills continuously at Options.Limit tokens per
// second (golang.org/x/time/rate's AllowN(now, 1)).
//
// AllowAt on a known key allocates nothing (BenchmarkAllowAt); a new key
// allocates its bucket.
func (l *Limiter[K]) AllowAt(key K, now time.Time) bool {
	return l.AllowHashAt(key, maphash.Comparable(l.seed, key), now)
}

// AllowHashAt is AllowAt for a caller that has already hashed key, which
// saves hashing a large key once more. h must be equal for equal keys; any
// such hash will do, a poor one costs only speed. A Limiter finds a key
// only under the hash it was given, so use either AllowAt or AllowHashAt
// (with one hash function) on a given Limiter, never both.
func (l *Limiter[K]) AllowHashAt(key K, h uint64, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets.Get(key, h)
	if !ok {
		// A fresh rate.Limiter starts full. A bucket evicted from the cache
		// is not reused: rate offers no way to refill one.
		b, _ = l.buckets.Add(key, h)
		*b = rate.NewLimiter(l.limit, l.burst)
	}
	return (*b).AllowN(now, 1)
}

// Len returns how many keys the Limiter holds now, at most Options.Size.
func (l *Limiter[K]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buckets.Len()
}

// Evicted returns how many keys were forgotten so far to keep at most
// Options.Size.
func (l *Limiter[K]) Evicted() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buckets.Evicted()
}
