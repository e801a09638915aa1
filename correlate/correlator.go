package correlate

import (
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"github.com/heraldgo/herald/internal/lru"
	"github.com/heraldgo/herald/ratelimit"
)

// Correlator decides, for each value of a stream of events, what to record:
// the value itself, a count of repeats of an earlier one, a combined
// stand-in for a group of similar ones, or nothing (spam). It is client-go's
// EventCorrelator for any type T, with keys of any comparable type K.
//
// A Correlator is safe for concurrent use and starts no goroutines. Its zero
// value is not usable: create one with New.
type Correlator[T any, K comparable] struct {
	key        func(T) K
	group      func(T) (K, K)
	combine    func(T, time.Time) T
	spamKey    func(T) K
	seed       func(T, time.Time) (int, time.Time)
	keep       func(T) T
	hash       func(K) uint64
	maxMembers int
	window     time.Duration
	clock      Clock

	mu     sync.Mutex // guards groups, obs, stats
	groups *lru.Cache[K, groupRecord[K]]
	obs    *lru.Cache[obsKey[K], Observation[T]]
	spam   *ratelimit.Limiter[K]
	stats  Stats
}

// Observation is what a Correlator remembers under one key.
type Observation[T any] struct {
	// Count is how many times the key was seen (or what Stored set).
	Count int
	// First is when the key was first seen.
	First time.Time
	// Last is the value recorded when the key was first seen (as
	// Options.Keep trimmed it), or the one given to Stored since: what a
	// repeat should update.
	Last T
}

// Result is what Correlate decided for one value.
type Result[T any, K comparable] struct {
	// Event is what to record: the value given, or the combined stand-in
	// of its group.
	Event T
	// Key is the key Event is counted under: the value's key, or its group
	// key when Combined.
	Key K
	// Combined reports whether Event is a group's stand-in.
	Combined bool
	// Count is the number of occurrences under Key, this one included.
	Count int
	// First is when Key was first seen.
	First time.Time
	// Previous is what was remembered under Key before this call; a zero
	// Count means Key is new (or was forgotten).
	Previous Observation[T]
	// Skip reports whether the spam filter refused this occurrence. It was
	// counted all the same, so that the next recorded repeat carries it.
	Skip bool
}

// Stats counts what a Correlator decided.
type Stats struct {
	// Correlated counts Correlate calls that returned a Result.
	Correlated uint64
	// New counts results under a key not remembered before.
	New uint64
	// Repeats counts results under a remembered key.
	Repeats uint64
	// Combined counts results that are a group's stand-in.
	Combined uint64
	// Skipped counts results the spam filter refused.
	Skipped uint64
	// Panics counts Correlate calls a panicking function ended.
	Panics uint64
}

// groupRecord is a group's members, least recently seen first, and the time
// of its last value.
type groupRecord[K comparable] struct {
	members []K
	last    time.Time
}

// obsKey keeps a group key and a value key apart even when they are equal
// values of K.
type obsKey[K comparable] struct {
	k        K
	combined bool
}

// New returns a Correlator that counts repeats under key(v) and does what
// opts says (zero numbers take client-go's defaults). It panics if key is
// nil or a number in opts is negative: those are programming errors.
func New[T any, K comparable](key func(T) K, opts Options[T, K]) *Correlator[T, K] {
	if key == nil {
		panic("correlate: nil key function")
	}
	if opts.CacheSize < 0 || opts.MaxMembers < 0 || opts.Window < 0 || opts.Burst < 0 || opts.Rate < 0 {
		panic("correlate: negative Options value")
	}
	c := &Correlator[T, K]{
		key:        key,
		group:      opts.Group,
		combine:    opts.Combine,
		spamKey:    opts.Spam,
		seed:       opts.Seed,
		keep:       opts.Keep,
		maxMembers: cmpOr(opts.MaxMembers, DefaultMaxMembers),
		window:     cmpOr(opts.Window, DefaultWindow),
		clock:      opts.Clock,
	}
	if c.clock == nil {
		c.clock = systemClock{}
	}
	if c.hash = opts.Hash; c.hash == nil {
		seed := maphash.MakeSeed()
		c.hash = func(k K) uint64 { return maphash.Comparable(seed, k) }
	}
	size := cmpOr(opts.CacheSize, DefaultCacheSize)
	c.groups = lru.New[K, groupRecord[K]](size)
	c.obs = lru.New[obsKey[K], Observation[T]](size)
	if c.spamKey != nil {
		c.spam = ratelimit.New[K](ratelimit.Options{
			Limit: cmpOr(opts.Rate, DefaultRate),
			Burst: cmpOr(opts.Burst, DefaultBurst),
			Size:  size,
		})
	}
	return c
}

func cmpOr[N comparable](v, def N) N {
	var zero N
	if v == zero {
		return def
	}
	return v
}

// Correlate decides what to record for v, in client-go's order:
//
//  1. group: if v's group reaches MaxMembers distinct members within
//     Window, v is replaced by the group's stand-in, counted under the
//     group key. To keep the group below MaxMembers, its least recently
//     seen member is then forgotten (client-go forgets a random one).
//  2. observe: the count under the key goes up by one, or starts at Seed.
//  3. spam: the occurrence takes a token from its spam bucket, or is
//     skipped; it stays counted either way.
//
// It reads the clock once for steps 1 and 2 and once more for step 3 (only
// with a spam filter), as client-go does, so that clocks that advance on
// every reading give the same results.
//
// A repeat allocates nothing; a new key allocates its cache entries.
func (c *Correlator[T, K]) Correlate(v T) (res Result[T, K], err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			c.stats.Panics++
			res, err = Result[T, K]{}, fmt.Errorf("%w: %v", ErrPanic, p)
		}
	}()
	now := c.clock.Now()
	res.Event = v
	if c.group != nil {
		g, m := c.group(v)
		if c.full(g, m, now) {
			res.Key, res.Combined = g, true
			if c.combine != nil {
				res.Event = c.combine(v, now)
			}
		}
	}
	if !res.Combined {
		res.Key = c.key(v)
	}

	ok, h := obsKey[K]{res.Key, res.Combined}, c.hash(res.Key)
	if res.Combined {
		h = ^h // group and value keys apart, even when equal
	}
	if o, hit := c.obs.Get(ok, h); hit && o.Count > 0 {
		res.Previous = *o
		o.Count++
		res.Count, res.First = o.Count, o.First
		c.stats.Repeats++
	} else {
		res.Count, res.First = 1, now
		if c.seed != nil {
			res.Count, res.First = c.seed(res.Event, now)
		}
		if !hit {
			o, _ = c.obs.Add(ok, h)
		}
		last := res.Event
		if c.keep != nil {
			last = c.keep(last)
		}
		*o = Observation[T]{Count: res.Count, First: res.First, Last: last}
		c.stats.New++
	}

	if c.spamKey != nil {
		sk := c.spamKey(res.Event)
		if !c.spam.AllowHashAt(sk, c.hash(sk), c.clock.Now()) {
			res.Skip = true
			c.stats.Skipped++
		}
	}
	if res.Combined {
		c.stats.Combined++
	}
	c.stats.Correlated++
	return res, nil
}

// full adds member m to group g at now and reports whether the group is
// full, in which case its least recently seen member is forgotten.
func (c *Correlator[T, K]) full(g, m K, now time.Time) bool {
	h := c.hash(g)
	rec, ok := c.groups.Get(g, h)
	if !ok || now.Sub(rec.last) > c.window {
		if !ok {
			rec, _ = c.groups.Add(g, h) // may recycle an evicted record
		}
		clear(rec.members)
		rec.members = rec.members[:0]
	}
	rec.last = now
	if i := slices.Index(rec.members, m); i >= 0 {
		// Seen again: now the most recently seen.
		copy(rec.members[i:], rec.members[i+1:])
		rec.members[len(rec.members)-1] = m
	} else {
		rec.members = append(rec.members, m)
	}
	if len(rec.members) < c.maxMembers {
		return false
	}
	var zero K
	copy(rec.members, rec.members[1:])
	rec.members[len(rec.members)-1] = zero
	rec.members = rec.members[:len(rec.members)-1]
	return true
}

// Stored replaces what is remembered under key (a value key, not a group
// key) with obs: typically what the sink stored, so that the next repeat
// updates it (client-go: UpdateState).
func (c *Correlator[T, K]) Stored(key K, obs Observation[T]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, h := obsKey[K]{k: key}, c.hash(key)
	o, ok := c.obs.Get(k, h) // most recently used, as client-go's Add makes it
	if !ok {
		o, _ = c.obs.Add(k, h)
	}
	*o = obs
}

// Stats returns a snapshot of the Correlator's counters.
func (c *Correlator[T, K]) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}
