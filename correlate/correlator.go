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
// stand-in for a group of similar ones, and whether a source that floods
// should be skipped. It is client-go's EventCorrelator for any type T, with
// keys of any comparable type K.
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

	mu     sync.Mutex // guards groups, obs, spam, stats
	groups *lru.Cache[K, groupRecord[K]]
	obs    *lru.Cache[obsKey[K], Observation[T]]
	spam   *ratelimit.Limiter[K] // nil without Options.Spam
	stats  Stats
}

// Observation is what a Correlator remembers under one key.
type Observation[T any] struct {
	// Count is how many times the key was seen (or what Stored set). Zero
	// means nothing is remembered: the next occurrence is new.
	Count int
	// First is when the key was first seen.
	First time.Time
	// Last is the value recorded when the key was first seen (trimmed by
	// Options.Keep), or the one given to Stored since: what a repeat should
	// update.
	Last T
}

// Result is what Correlate decided for one value.
type Result[T any, K comparable] struct {
	// Event is what to record: the value given, or the combined stand-in
	// of its group when Combined.
	Event T
	// Key is the key Event is counted under: the value's key, or its group
	// key when Combined.
	Key K
	// Combined reports whether Event is a group's stand-in.
	Combined bool
	// Count is the number of occurrences under Key, this one included:
	// Previous.Count+1 for a repeat, Seed's count for a new key.
	Count int
	// First is when Key was first seen: Previous.First for a repeat, Seed's
	// time for a new key.
	First time.Time
	// Previous is what was remembered under Key before this call; a zero
	// Count means Key is new (or was forgotten).
	Previous Observation[T]
	// Skip reports whether the spam filter refused this occurrence. It was
	// counted all the same, so the next recorded repeat carries it.
	Skip bool
}

// Stats counts what a Correlator decided. Every Correlate call that
// returns a Result counts once in Correlated and once in either New or
// Repeats.
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
	// Panics counts Correlate calls ended by a panicking function; they
	// returned an error wrapping ErrPanic and no Result.
	Panics uint64
	// Evicted counts observations forgotten to keep the cache at
	// Options.CacheSize: the next occurrence of such a key is new again.
	Evicted uint64
}

// groupRecord is a group's members, least recently seen first, and the time
// of its last value.
type groupRecord[K comparable] struct {
	members []K
	last    time.Time
}

// obsKey tells a group key from a value key even when they are equal
// values of K, so that a group's count never mixes with an event's.
type obsKey[K comparable] struct {
	k        K
	combined bool
}

// New returns a Correlator that counts repeats under key(v) and groups,
// combines and filters as opts says; zero numbers in opts take client-go's
// defaults. T and K are inferred from key. New panics if key is nil or a
// number in opts is negative: those are programming errors.
func New[T any, K comparable](key func(T) K, opts Options[T, K]) *Correlator[T, K] {
	switch {
	case key == nil:
		panic("correlate: nil key function")
	case opts.CacheSize < 0:
		panic("correlate: negative Options.CacheSize")
	case opts.MaxMembers < 0:
		panic("correlate: negative Options.MaxMembers")
	case opts.Window < 0:
		panic("correlate: negative Options.Window")
	case opts.Burst < 0:
		panic("correlate: negative Options.Burst")
	case opts.Rate < 0:
		panic("correlate: negative Options.Rate")
	}
	c := &Correlator[T, K]{
		key:        key,
		group:      opts.Group,
		combine:    opts.Combine,
		spamKey:    opts.Spam,
		seed:       opts.Seed,
		keep:       opts.Keep,
		hash:       opts.Hash,
		maxMembers: cmpOr(opts.MaxMembers, DefaultMaxMembers),
		window:     cmpOr(opts.Window, DefaultWindow),
		clock:      opts.Clock,
	}
	if c.clock == nil {
		c.clock = systemClock{}
	}
	if c.hash == nil {
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

// cmpOr returns v, or def if v is zero.
func cmpOr[N comparable](v, def N) N {
	var zero N
	if v == zero {
		return def
	}
	return v
}

// Correlate decides what to record for v, in client-go's order:
//
//  1. Group: v's member key joins its group. If the group now has
//     MaxMembers distinct members within Window, v is replaced by the
//     group's stand-in (Combine), counted under the group key, and the
//     group's least recently seen member is forgotten to keep it below
//     MaxMembers. client-go forgets a random member instead.
//  2. Observe: the count under the key goes up by one, or starts at Seed's.
//  3. Spam: the occurrence takes a token from the bucket of Spam(Event),
//     or is skipped. It stays counted either way.
//
// Correlate reads the clock once for steps 1 and 2, and once more for step
// 3 when there is a spam filter, as client-go does: a clock that advances
// on every reading gives the same results in both.
//
// If the key function, a function of Options or the clock panics,
// Correlate returns an error wrapping ErrPanic and the Correlator stays
// usable: nothing was counted, though a group may have gained v's member
// if Combine panicked.
//
// A repeat allocates nothing (BenchmarkCorrelate/path=repeat); a new key
// allocates its cache entries.
func (c *Correlator[T, K]) Correlate(v T) (res Result[T, K], err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			c.stats.Panics++
			res, err = Result[T, K]{}, fmt.Errorf("%w: %v", ErrPanic, p)
		}
	}()
	// The caller's functions run first, where a panic changes nothing
	// (Combine aside), and the caches are updated after them.
	now := c.clock.Now()
	res.Event, res.Key = v, c.key(v) // client-go computes the event key first too

	// 1. Group.
	if c.group != nil {
		g, m := c.group(v)
		if c.joinLocked(g, m, now) {
			res.Key, res.Combined = g, true
			if c.combine != nil {
				res.Event = c.combine(v, now)
			}
		}
	}
	var (
		sk   K
		skh  uint64
		now2 time.Time
	)
	if c.spamKey != nil {
		sk = c.spamKey(res.Event)
		skh = c.hash(sk)
		now2 = c.clock.Now()
	}

	// 2. Observe: one lookup, then the entry is updated in place.
	ok, h := obsKey[K]{res.Key, res.Combined}, c.hash(res.Key)
	if res.Combined {
		h = ^h // spread group keys away from equal event keys
	}
	o, hit := c.obs.Get(ok, h)
	if hit && o.Count > 0 {
		res.Previous = *o
		o.Count++
		res.Count, res.First = o.Count, o.First
	} else {
		res.Count, res.First = 1, now
		if c.seed != nil {
			res.Count, res.First = c.seed(res.Event, now)
		}
		last := res.Event
		if c.keep != nil {
			last = c.keep(last)
		}
		if !hit {
			o, _ = c.obs.Add(ok, h) // may reuse an evicted entry
		}
		*o = Observation[T]{Count: res.Count, First: res.First, Last: last}
	}

	// 3. Spam, after the count: a skipped occurrence still counts.
	if c.spamKey != nil {
		res.Skip = !c.spam.AllowHashAt(sk, skh, now2)
	}

	c.countLocked(&res)
	return res, nil
}

// countLocked adds res to the counters.
func (c *Correlator[T, K]) countLocked(res *Result[T, K]) {
	c.stats.Correlated++
	if res.Previous.Count > 0 {
		c.stats.Repeats++
	} else {
		c.stats.New++
	}
	if res.Combined {
		c.stats.Combined++
	}
	if res.Skip {
		c.stats.Skipped++
	}
}

// joinLocked adds member m to group g at now and reports whether the group
// is full, in which case its least recently seen member is forgotten.
func (c *Correlator[T, K]) joinLocked(g, m K, now time.Time) (full bool) {
	h := c.hash(g)
	rec, ok := c.groups.Get(g, h)
	if !ok || now.Sub(rec.last) > c.window {
		if !ok {
			rec, _ = c.groups.Add(g, h) // may reuse an evicted record
		}
		clear(rec.members) // drop references for the garbage collector
		rec.members = rec.members[:0]
	}
	rec.last = now
	if i := slices.Index(rec.members, m); i >= 0 {
		// Seen again: it becomes the most recently seen.
		copy(rec.members[i:], rec.members[i+1:])
		rec.members[len(rec.members)-1] = m
	} else {
		rec.members = append(rec.members, m)
	}
	if len(rec.members) < c.maxMembers {
		return false
	}
	// Full: forget the least recently seen member, the first.
	var zero K
	copy(rec.members, rec.members[1:])
	rec.members[len(rec.members)-1] = zero
	rec.members = rec.members[:len(rec.members)-1]
	return true
}

// Stored replaces what is remembered under the value key key (never a
// group key) with obs, typically what the sink stored, so that the next
// repeat updates it: its Count is obs.Count+1, its First obs.First and its
// Previous obs. obs.Last is kept as given. A zero obs.Count makes the next
// occurrence new. This is client-go's UpdateState.
//
// Of the caller's functions, Stored runs only Options.Hash; if it panics,
// the panic reaches the caller of Stored.
func (c *Correlator[T, K]) Stored(key K, obs Observation[T]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, h := obsKey[K]{k: key}, c.hash(key)
	o, ok := c.obs.Get(k, h) // now the most recently used, as client-go's Add makes it
	if !ok {
		o, _ = c.obs.Add(k, h)
	}
	*o = obs
}

// Stats returns a snapshot of the Correlator's counters.
func (c *Correlator[T, K]) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Evicted = c.obs.Evicted()
	return s
}
