// Package correlation is the engine under correlate.Correlator and
// k8sadapter.EventCorrelator: it groups similar values, counts repeats and
// filters spam. Beyond what correlate exports, it takes what the Kubernetes
// adapter needs to match client-go exactly and fast: key functions that
// return their key's hash, computed once from hashes of the event's fields;
// the count and first time of a new key taken from the value itself (Seed);
// a trimmed record of a value (Keep, of its own type L); and a second clock
// reading for the spam filter (SpamClock).
//
// A Correlator is not safe for concurrent use: its owner locks, as
// golang-lru's Cache locks around simplelru.
package correlation

import (
	"slices"
	"time"

	"golang.org/x/time/rate"

	"github.com/heraldgo/herald/internal/hashlru"
)

// Clock tells the time.
type Clock interface {
	Now() time.Time
}

// Options configures a Correlator. Every function is required unless it
// says what nil means. The numbers must be positive where they are used:
// CacheSize always, MaxMembers and Window with Group, Burst and Rate with
// Spam.
//
// Key, Group, Combine, Spam and the clock may be the user's code: they run
// before Correlate changes anything, so that a panic in any of them leaves
// the Correlator as it was. Seed and Keep run while it commits and must
// not panic.
type Options[T any, K, M comparable, L any] struct {
	// Key returns v's key and its hash; equal keys must have equal hashes.
	Key func(v T) (K, uint64)
	// Group returns v's group key, its hash and v's member key in the
	// group. nil: no groups.
	Group func(v T) (group K, hash uint64, member M)
	// Combine builds a full group's stand-in from the value that filled
	// it. nil: that value stands in.
	Combine func(trigger T, now time.Time) T
	// Spam returns the key of v's token bucket and its hash; v may be a
	// stand-in. nil: no spam filter.
	Spam func(v T) (K, uint64)
	// Seed returns the count and first time of a key seen for the first
	// time (or forgotten). nil: 1 and now.
	Seed func(v T, now time.Time) (count int, first time.Time)
	// Keep returns what to remember of a new value as Observation.Last.
	Keep func(v T) L
	// SpamClock makes Correlate read the clock a second time, for the
	// spam filter, as client-go does.
	SpamClock bool

	CacheSize  int           // entries in each cache
	MaxMembers int           // distinct members that make a group full
	Window     time.Duration // how long a group lives after its last member
	Burst      int           // tokens in a spam bucket
	Rate       rate.Limit    // refill of a spam bucket, tokens per second
	Clock      Clock
}

// Correlator is the engine. Its zero value is not usable: create one with
// New.
type Correlator[T any, K, M comparable, L any] struct {
	key        func(T) (K, uint64)
	group      func(T) (K, uint64, M)
	combine    func(T, time.Time) T
	spamKey    func(T) (K, uint64)
	seed       func(T, time.Time) (int, time.Time)
	keep       func(T) L
	spamClock  bool
	maxMembers int
	window     time.Duration
	clock      Clock

	groups *hashlru.Cache[K, group[M]]
	obs    *hashlru.Cache[obsKey[K], Observation[L]]
	spam   *hashlru.Limiter[K] // nil without Options.Spam
	stats  Stats
}

// Observation is what a Correlator remembers under one key.
type Observation[L any] struct {
	Count int       // occurrences so far; zero means forgotten
	First time.Time // when the key was first seen
	Last  L         // what Keep kept of the value, or what Stored set
}

// Result is what Correlate decided for one value.
type Result[T any, K comparable, L any] struct {
	Event    T    // the value, or its group's stand-in
	Key      K    // the key Event is counted under
	Combined bool // Event is a stand-in, counted under its group key
	Count    int  // occurrences under Key, this one included
	First    time.Time
	Previous Observation[L] // what was remembered before; zero Count: new
	Skip     bool           // the spam filter refused this occurrence
}

// Stats counts what a Correlator decided.
type Stats struct {
	Correlated, New, Repeats, Combined, Skipped, Panics, Evicted uint64
}

// group is a group's members, least recently seen first, and the time of
// its last value.
type group[M comparable] struct {
	members []M
	last    time.Time
}

// obsKey tells a group key from a value key even when they are equal
// values of K, so that a group's count never mixes with a value's.
type obsKey[K comparable] struct {
	k        K
	combined bool
}

// New returns a Correlator configured by o. It panics on a missing
// required function or clock and on a number below 1 that is used (the
// group settings with Group, the spam settings with Spam): the callers
// check what their users give.
func New[T any, K, M comparable, L any](o Options[T, K, M, L]) *Correlator[T, K, M, L] {
	switch {
	case o.Key == nil || o.Keep == nil || o.Clock == nil || o.CacheSize < 1:
		panic("correlation: incomplete Options")
	case o.Group != nil && (o.MaxMembers < 1 || o.Window <= 0):
		panic("correlation: incomplete group Options")
	case o.Spam != nil && (o.Burst < 1 || o.Rate <= 0):
		panic("correlation: incomplete spam Options")
	}
	c := &Correlator[T, K, M, L]{
		key:        o.Key,
		group:      o.Group,
		combine:    o.Combine,
		spamKey:    o.Spam,
		seed:       o.Seed,
		keep:       o.Keep,
		spamClock:  o.SpamClock,
		maxMembers: o.MaxMembers,
		window:     o.Window,
		clock:      o.Clock,
		groups:     hashlru.New[K, group[M]](o.CacheSize),
		obs:        hashlru.New[obsKey[K], Observation[L]](o.CacheSize),
	}
	if c.spamKey != nil {
		c.spam = hashlru.NewLimiter[K](o.Rate, o.Burst, o.CacheSize)
	}
	return c
}

// plan is what one Correlate call decided before changing anything.
type plan[K, M comparable] struct {
	now     time.Time
	key     obsKey[K] // the key counted under: the value's or its group's
	h       uint64    // key's hash
	g       K         // the group key
	gh      uint64    // its hash
	m       M         // the member key
	grp     *group[M] // the group as it is, nil if unknown
	fresh   bool      // the group starts afresh: unknown, or its window lapsed
	at      int       // m's index among the group's members, or -1
	full    bool      // the group is full with m: v is combined
	sk      K         // the spam key
	skh     uint64    // its hash
	spamNow time.Time // the time the spam bucket is taken at
}

// Correlate decides what to record for v: group, observe, spam filter, in
// client-go's order. It happens in two phases. The plan runs every
// function of Options that may panic and reads the caches without
// changing them; the commit then changes the caches and counters, and
// calls no function that may panic. So a Correlate call either has all its
// effects or, having panicked, none but Stats.Panics: it then returns a
// zero Result and the panic value.
//
// The plan and the result live on the stack: keys are large, and every
// pointer written to the heap while the garbage collector marks costs a
// write barrier.
func (c *Correlator[T, K, M, L]) Correlate(v T) (res Result[T, K, L], panicked any) {
	var p plan[K, M]
	if panicked = c.plan(v, &res, &p); panicked != nil {
		c.stats.Panics++
		return Result[T, K, L]{}, panicked
	}
	c.commit(&res, &p)
	return res, nil
}

// plan fills p and res.Event, res.Key and res.Combined, and returns the
// value of a panic in the functions it calls, or nil.
func (c *Correlator[T, K, M, L]) plan(v T, res *Result[T, K, L], p *plan[K, M]) (panicked any) {
	defer func() { panicked = recover() }()
	p.now = c.clock.Now()
	res.Event = v
	p.key.k, p.h = c.key(v) // client-go computes the value's key first too
	if c.group != nil {
		p.g, p.gh, p.m = c.group(v)
		p.grp, _ = c.groups.Peek(&p.g, p.gh)
		p.fresh = p.grp == nil || p.now.After(p.grp.last.Add(c.window)) // more than Window since the last
		p.at, p.full = -1, c.maxMembers <= 1
		if !p.fresh {
			p.at = slices.Index(p.grp.members, p.m)
			n := len(p.grp.members)
			if p.at < 0 {
				n++
			}
			p.full = n >= c.maxMembers
		}
		if p.full {
			p.key, p.h = obsKey[K]{k: p.g, combined: true}, ^p.gh // spread group keys away from equal value keys
			res.Combined = true
			if c.combine != nil {
				res.Event = c.combine(v, p.now)
			}
		}
	}
	res.Key = p.key.k
	if c.spamKey != nil {
		p.sk, p.skh = c.spamKey(res.Event)
		p.spamNow = p.now
		if c.spamClock {
			p.spamNow = c.clock.Now()
		}
	}
	return nil
}

// commit applies p: the group gains its member, the count goes up or
// starts, the spam bucket gives a token or the occurrence is skipped.
func (c *Correlator[T, K, M, L]) commit(res *Result[T, K, L], p *plan[K, M]) {
	if c.group != nil {
		c.join(p)
	}

	o, hit, _ := c.obs.GetOrAdd(&p.key, p.h)
	if hit && o.Count > 0 {
		res.Previous = *o
		o.Count++
		res.Count, res.First = o.Count, o.First
		c.stats.Repeats++
	} else {
		res.Count, res.First = 1, p.now
		if c.seed != nil {
			res.Count, res.First = c.seed(res.Event, p.now)
		}
		*o = Observation[L]{Count: res.Count, First: res.First, Last: c.keep(res.Event)}
		c.stats.New++
	}

	// After the count: a skipped occurrence still counts.
	if c.spam != nil {
		res.Skip = !c.spam.AllowAt(&p.sk, p.skh, p.spamNow)
	}

	c.stats.Correlated++
	if res.Combined {
		c.stats.Combined++
	}
	if res.Skip {
		c.stats.Skipped++
	}
}

// join adds p's member to its group as planned; when the group is full,
// its least recently seen member is forgotten to keep it below MaxMembers.
func (c *Correlator[T, K, M, L]) join(p *plan[K, M]) {
	rec := p.grp
	if rec == nil {
		rec, _ = c.groups.Add(&p.g, p.gh) // may reuse a forgotten group's members
	} else {
		c.groups.Touch(p.gh) // found by plan's Peek: mark it used
	}
	if p.fresh {
		clear(rec.members) // drop references for the garbage collector
		rec.members = rec.members[:0]
	}
	rec.last = p.now
	if p.at >= 0 {
		// Seen again: it becomes the most recently seen.
		copy(rec.members[p.at:], rec.members[p.at+1:])
		rec.members[len(rec.members)-1] = p.m
	} else {
		rec.members = append(rec.members, p.m)
	}
	if p.full {
		var zero M
		copy(rec.members, rec.members[1:])
		rec.members[len(rec.members)-1] = zero
		rec.members = rec.members[:len(rec.members)-1]
	}
}

// Stored replaces what is remembered under the value key key, whose hash
// is h, with obs, and marks it most recently used.
func (c *Correlator[T, K, M, L]) Stored(key *K, h uint64, obs Observation[L]) {
	k := obsKey[K]{k: *key}
	o, _, _ := c.obs.GetOrAdd(&k, h)
	*o = obs
}

// Stats returns the counters; Evicted counts observations forgotten.
func (c *Correlator[T, K, M, L]) Stats() Stats {
	s := c.stats
	s.Evicted = c.obs.Evicted()
	return s
}
