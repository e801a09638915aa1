package ratelimit

import (
	"fmt"
	"hash/maphash"
	"math"
	"sync"
	"time"

	"github.com/heraldgo/herald/internal/keyedlimit"
)

// Limiter is a set of token buckets, one per key, keeping at most
// Options.Size keys: adding one more forgets the least recently used, and a
// forgotten key comes back with a full bucket.
//
// A Limiter is safe for concurrent use and starts no goroutines. Its zero
// value is not usable: create one with New.
type Limiter[K comparable] struct {
	seed maphash.Seed // hashes each key once per call

	mu      sync.Mutex // guards buckets
	buckets *keyedlimit.Buckets[K]
}

// New returns a Limiter configured by opts, whose zero fields take the
// defaults. It panics if a field of opts is negative, or opts.Limit is NaN:
// that is a programming error.
func New[K comparable](opts Options) *Limiter[K] {
	switch {
	case opts.Limit < 0:
		panic("ratelimit: negative Options.Limit")
	case math.IsNaN(float64(opts.Limit)):
		panic("ratelimit: NaN Options.Limit")
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
	return &Limiter[K]{seed: maphash.MakeSeed(), buckets: keyedlimit.New[K](opts.Limit, opts.Burst, opts.Size)}
}

// AllowAt takes one token from key's bucket at time now and reports whether
// there was one. A key not seen before, or forgotten, starts with a full
// bucket, which then refills continuously at Options.Limit tokens per
// second (golang.org/x/time/rate's AllowN(now, 1)).
//
// AllowAt allocates nothing from a key's second call on (BenchmarkAllowAt):
// a key's first call allocates its cache entry, which holds its token
// bucket, unless it reuses the entry of a key forgotten. A forgotten key
// starts over.
//
// As in a Go map, a key that is not equal to itself (a NaN float, or a
// struct or array holding one) is never found again: every call with one
// is allowed, and adds a key, forgetting the least recently used.
//
// AllowAt panics, naming the key's type, if key cannot be hashed: a key of
// interface type holding a slice, map or function (or a struct or array
// holding one), which a Go map refuses too. That is a programming error;
// the Limiter stays usable.
func (l *Limiter[K]) AllowAt(key K, now time.Time) bool {
	h := l.hash(key)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buckets.Allow(h, func(k *K) bool { return *k == key }, func() K { return key }, now)
}

// hash returns key's hash. maphash panics on a key that cannot be hashed,
// with a runtime error; hash panics then with this package's name.
func (l *Limiter[K]) hash(key K) uint64 {
	defer func() {
		if r := recover(); r != nil {
			panic(fmt.Sprintf("ratelimit: key of type %T cannot be hashed: %v", key, r))
		}
	}()
	return maphash.Comparable(l.seed, key)
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
