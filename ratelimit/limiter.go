package ratelimit

import (
	"hash/maphash"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/heraldgo/herald/internal/lru"
)

// Limiter is a set of token buckets, one per key, holding at most
// Options.Size keys. It is safe for concurrent use; its zero value is not
// usable: create one with New.
type Limiter[K comparable] struct {
	limit rate.Limit
	burst int
	seed  maphash.Seed

	mu      sync.Mutex // guards buckets
	buckets *lru.Cache[K, *rate.Limiter]
}

// New returns a Limiter configured by opts. It panics on negative options:
// those are programming errors.
func New[K comparable](opts Options) *Limiter[K] {
	if opts.Limit < 0 {
		panic("ratelimit: negative Options.Limit")
	}
	if opts.Burst < 0 {
		panic("ratelimit: negative Options.Burst")
	}
	if opts.Size < 0 {
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
// bucket. It allocates only when it adds a key.
func (l *Limiter[K]) AllowAt(key K, now time.Time) bool {
	return l.AllowHashAt(key, maphash.Comparable(l.seed, key), now)
}

// AllowHashAt is AllowAt for a caller that has already hashed key: h must
// be the same for equal keys (any hash will do; a poor one only costs
// speed). It saves hashing a large key once more. Use either AllowAt or
// AllowHashAt with a given Limiter, not both.
func (l *Limiter[K]) AllowHashAt(key K, h uint64, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets.Get(key, h)
	if !ok {
		b, _ = l.buckets.Add(key, h)
		*b = rate.NewLimiter(l.limit, l.burst)
	}
	return (*b).AllowN(now, 1)
}

// Len returns how many keys are kept now.
func (l *Limiter[K]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buckets.Len()
}

// Evicted returns how many keys were forgotten to keep at most Size.
func (l *Limiter[K]) Evicted() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buckets.Evicted()
}
