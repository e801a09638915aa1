package correlate

import (
	"hash/maphash"
	"math"
	"sync"
	"time"

	"github.com/heraldgo/herald/internal/correlation"
)

// Correlator decides, for each value of a stream of events, what to record:
// the value itself, a count of repeats of an earlier one, a combined
// stand-in for a group of similar ones, and whether a source that floods
// should be skipped. Values are of any type T, keys of any comparable type
// K.
//
// A Correlator is safe for concurrent use and starts no goroutines. Its zero
// value is not usable: create one with New.
type Correlator[T any, K comparable] struct {
	seed maphash.Seed // hashes every key

	report func(Summary[T, K]) // Options.Report; nil: none

	mu     sync.Mutex // guards engine, key, group, member, spam and storedPanics
	engine *correlation.Correlator[T, K, K, T]
	// The keys of the call in progress, kept by the engine's Hash
	// functions for its Match and Make: each key function runs once per
	// call, before anything changes.
	key, group, member, spam K
	storedPanics             uint64 // see Stats.StoredPanics
}

// Observation is what a Correlator remembers under one key.
type Observation[T any] struct {
	// Count is how many times the key was seen (or what Stored set). Zero,
	// or below, means nothing is remembered: the next occurrence is new.
	Count int
	// First is when the key was first seen.
	First time.Time
	// Last is the value recorded when the key was first seen, or the one
	// given to Stored since: what a repeat should update.
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
	// Previous.Count+1 for a repeat, 1 for a new key. It stops at
	// math.MaxInt, a count only Stored can reach.
	Count int
	// First is when Key was first seen: Previous.First for a repeat, the
	// time of this call for a new key.
	First time.Time
	// Previous is what was remembered under Key before this call; a zero
	// Count means Key is new (or was forgotten).
	Previous Observation[T]
	// Skip reports whether the spam filter refused this occurrence. It was
	// counted all the same, so the next recorded repeat carries it.
	Skip bool
}

// Summary reports values of one key that the spam filter skipped and that
// no recorded result carried: those skipped since the key's last result
// that was not skipped (whose Count carried the ones before it) or its
// last summary. It is what lets the tail of a flood be reported: once a
// flood stops, no repeat will carry its last skipped values.
type Summary[T any, K comparable] struct {
	// Key is the key the values were counted under: a value key, or a
	// group key when Combined.
	Key K
	// Combined reports whether Key is a group key: the values were
	// combined stand-ins.
	Combined bool
	// Count is how many values the summary reports: skipped since the
	// key's last report (a recorded result or a summary).
	Count int
	// Total is the key's count when the summary was made, these values
	// included, as Result.Count counts.
	Total int
	// First and Last are when the first and the last of them came (the
	// time Correlate read).
	First, Last time.Time
	// Event is the last of them: the value, or the stand-in, that would
	// have been recorded.
	Event T
	// Evicted reports whether the summary was made because the key was
	// forgotten to make room in the cache: its next value will be new
	// (Count 1). Otherwise Flush made it.
	Evicted bool
}

// Stats counts what a Correlator decided. Every Correlate call counts once:
// in Panics if it returned an error, otherwise in Correlated and in either
// New or Repeats. Combined and Skipped count among the Correlated results.
//
// Nothing skipped goes unreported, and the counts add up at every
// snapshot:
//
//	Correlated = (Correlated - Skipped) + Carried + Summarized + Unreported
//
// that is, every value is recorded (a result not skipped: the value, a
// repeat's count or a group's stand-in), or skipped and then carried by
// the count of a later recorded result of its key, reported in a
// Summary, or not reported yet (until the next Flush or the key's
// eviction).
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
	// returned an error wrapping ErrPanic, no Result, and changed nothing
	// else.
	Panics uint64
	// Evicted counts observations forgotten to keep the cache at
	// Options.CacheSize: the next occurrence of such a key is new again.
	Evicted uint64
	// StoredPanics counts Stored calls whose key panicked when hashed (a
	// key of interface type holding a slice, map or function); they
	// changed nothing.
	StoredPanics uint64
	// Carried counts skipped values that a later recorded result of their
	// key carried: its Count includes them.
	Carried uint64
	// Summarized counts skipped values reported in summaries, and
	// Summaries the summaries (one per key and report).
	Summarized, Summaries uint64
	// Unreported is how many skipped values wait for a report now: a later
	// recorded result of their key, a Flush, or their key's eviction.
	Unreported uint64
}

// New returns a Correlator that counts repeats under key(v) and groups,
// combines and filters as opts says; zero numbers in opts take the
// defaults. T and K are inferred from key. New panics if key is nil, a
// number in opts is negative or opts.Rate is NaN: those are programming
// errors.
func New[T any, K comparable](key func(T) K, opts Options[T, K]) *Correlator[T, K] {
	mustBeValid(key, opts)
	c := &Correlator[T, K]{seed: maphash.MakeSeed(), report: opts.Report}
	o := correlation.Options[T, K, K, T]{
		Key: correlation.Keyer[T, K]{
			Hash:  func(v T) uint64 { c.key = key(v); return maphash.Comparable(c.seed, c.key) },
			Match: func(_ T, k *K) bool { return *k == c.key },
			Make:  func(T) K { return c.key },
		},
		Combine:    opts.Combine,
		Keep:       func(v T) T { return v },
		CacheSize:  cmpOr(opts.CacheSize, DefaultCacheSize),
		MaxMembers: cmpOr(opts.MaxMembers, DefaultMaxMembers),
		Window:     cmpOr(opts.Window, DefaultWindow),
		Burst:      cmpOr(opts.Burst, DefaultBurst),
		Rate:       cmpOr(opts.Rate, DefaultRate),
		Clock:      opts.Clock,
		Summaries:  true,
	}
	if o.Clock == nil {
		o.Clock = systemClock{}
	}
	if group := opts.Group; group != nil {
		o.Group = correlation.Keyer[T, K]{
			Hash:  func(v T) uint64 { c.group, c.member = group(v); return maphash.Comparable(c.seed, c.group) },
			Match: func(_ T, k *K) bool { return *k == c.group },
			Make:  func(T) K { return c.group },
		}
		o.Member = func(T) K { return c.member }
	}
	if spam := opts.Spam; spam != nil {
		o.Spam = correlation.Keyer[T, K]{
			Hash:  func(v T) uint64 { c.spam = spam(v); return maphash.Comparable(c.seed, c.spam) },
			Match: func(_ T, k *K) bool { return *k == c.spam },
			Make:  func(T) K { return c.spam },
		}
	}
	c.engine = correlation.New(o)
	return c
}

// mustBeValid panics, as New documents, on a nil key or an impossible
// number in opts.
func mustBeValid[T any, K comparable](key func(T) K, opts Options[T, K]) {
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
	case math.IsNaN(float64(opts.Rate)):
		panic("correlate: NaN Options.Rate")
	}
}

// cmpOr returns v, or def if v is zero.
func cmpOr[N comparable](v, def N) N {
	var zero N
	if v == zero {
		return def
	}
	return v
}

// Correlate decides what to record for v, in three steps:
//
//  1. Group: v's member key joins its group. If the group now has
//     MaxMembers distinct members within Window, v is replaced by the
//     group's stand-in (Combine), counted under the group key, and the
//     group's least recently seen member is forgotten to keep it below
//     MaxMembers.
//  2. Observe: the count under the key goes up by one, or starts at 1.
//  3. Spam: the occurrence takes a token from the bucket of Spam(Event),
//     or is skipped. It stays counted either way.
//
// Correlate reads the clock once; that time serves all three steps.
//
// Correlate calls the key function, the functions of Options and the clock
// before it changes anything. If one of them panics, Correlate returns an
// error wrapping ErrPanic and a zero Result, and the Correlator is as if
// the call had not happened, but for Stats.Panics: no count, no group
// member, no token taken, no entry used or forgotten.
//
// A repeat allocates nothing (BenchmarkCorrelate/path=repeat). A new key
// allocates its cache entries, unless it reuses those of keys forgotten;
// a spam bucket lives in its entry.
func (c *Correlator[T, K]) Correlate(v T) (Result[T, K], error) {
	c.mu.Lock()
	r, p := c.engine.Correlate(v)
	due := c.engine.Due() // a key forgotten to make room
	k := c.key
	if r.Combined {
		k = c.group
	}
	c.mu.Unlock()
	c.reportAll(due)
	if p != nil {
		return Result[T, K]{}, panicError(p)
	}
	return Result[T, K]{
		Event:    r.Event,
		Key:      k,
		Combined: r.Combined,
		Count:    r.Count,
		First:    r.First,
		Previous: Observation[T](r.Previous),
		Skip:     r.Skip,
	}, nil
}

// Stored replaces what is remembered under the value key key (never a
// group key) with obs, typically what the sink stored, so that the next
// repeat updates it: its Count is obs.Count+1, its First obs.First and its
// Previous obs (its Count stays at math.MaxInt if obs.Count is that). A
// zero or negative obs.Count makes the next occurrence new. The key
// becomes the most recently used.
//
// A key that cannot be hashed (a key of interface type holding a slice,
// map or function, for which Correlate returns an error wrapping ErrPanic)
// cannot be remembered: Stored then changes nothing and counts the call in
// Stats.StoredPanics. It never panics.
func (c *Correlator[T, K]) Stored(key K, obs Observation[T]) {
	h, ok := c.hash(key)
	c.mu.Lock()
	if !ok {
		c.storedPanics++
		c.mu.Unlock()
		return
	}
	c.engine.Stored(h, func(k *K) bool { return *k == key }, func() K { return key }, correlation.Observation[T](obs))
	due := c.engine.Due() // a key forgotten to make room
	c.mu.Unlock()
	c.reportAll(due)
}

// Flush reports a Summary of every key with skipped values that no
// recorded result carried, least recently used key first, to
// Options.Report, on the caller's goroutine, and returns once Report has
// returned for each. Call it on a period of the application's choosing
// (a ticker in the loop that correlates) and once more when the
// application stops: the Correlator owns no goroutine and no timer, so
// nothing else reports a flood's tail while it lasts. After Flush,
// Stats.Unreported counts only the values skipped since it began.
func (c *Correlator[T, K]) Flush() {
	c.mu.Lock()
	c.engine.Flush()
	due := c.engine.Due()
	c.mu.Unlock()
	c.reportAll(due)
}

// reportAll hands the summaries to Options.Report, in order.
func (c *Correlator[T, K]) reportAll(due []correlation.Summary[T, K]) {
	if c.report == nil {
		return
	}
	for _, s := range due {
		c.report(Summary[T, K](s))
	}
}

// Peek returns what is remembered under key, without counting anything
// or marking it used: the observation of the value key key or, if no
// value of that key is remembered, of the group key key (the count of
// its combined stand-ins); and how many of its values wait unreported
// (see Summary). It reports false if neither is remembered. It is for
// dashboards; it never panics (a key that cannot be hashed is not
// remembered).
func (c *Correlator[T, K]) Peek(key K) (obs Observation[T], unreported int, ok bool) {
	h, ok := c.hash(key)
	if !ok {
		return Observation[T]{}, 0, false
	}
	match := func(k *K) bool { return *k == key }
	c.mu.Lock()
	defer c.mu.Unlock()
	o, n, ok := c.engine.Peek(h, match, false)
	if !ok {
		o, n, ok = c.engine.Peek(^h, match, true) // the engine spreads group keys so
	}
	return Observation[T](o), n, ok
}

// hash returns key's hash, or false if hashing it panicked: maphash does
// on a key of interface type holding a value that cannot be hashed.
func (c *Correlator[T, K]) hash(key K) (h uint64, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return maphash.Comparable(c.seed, key), true
}

// Stats returns a snapshot of the Correlator's counters.
func (c *Correlator[T, K]) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.engine.Stats()
	return Stats{
		Correlated:   s.Correlated,
		New:          s.New,
		Repeats:      s.Repeats,
		Combined:     s.Combined,
		Skipped:      s.Skipped,
		Panics:       s.Panics,
		Evicted:      s.Evicted,
		StoredPanics: c.storedPanics,
		Carried:      s.Carried,
		Summarized:   s.Summarized,
		Summaries:    s.Summaries,
		Unreported:   s.Unreported,
	}
}
