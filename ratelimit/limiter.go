package ratelimit

import (
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"
)

// Limiter is a set of token buckets, one per key, holding at most
// Options.Size keys. It is safe for concurrent use; its zero value is not
// usable: create one with New.
type Limiter[K comparable] struct {
	limit rate.Limit
	burst int

	mu      sync.Mutex // guards buckets and evicted
	buckets *simplelru.LRU[K, *rate.Limiter]
	evicted uint64
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
	l := &Limiter[K]{limit: opts.Limit, burst: opts.Burst}
	// The callback runs under l.mu, inside Add.
	l.buckets, _ = simplelru.NewLRU[K, *rate.Limiter](opts.Size, func(K, *rate.Limiter) { l.evicted++ })
	return l
}

// AllowAt takes one token from key's bucket at time now and reports whether
// there was one. A key not seen before, or forgotten, starts with a full
// bucket. It allocates only when it adds a key.
func (l *Limiter[K]) AllowAt(key K, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets.Get(key)
	if !ok {
		b = rate.NewLimiter(l.limit, l.burst)
		l.buckets.Add(key, b)
	}
	return b.AllowN(now, 1)
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
	return l.evicted
}
