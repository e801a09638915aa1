// Package correlation is the engine under correlate.Correlator and
// k8sadapter.EventCorrelator: it groups similar values, counts repeats and
// filters spam. Beyond what correlate exports, it takes what the Kubernetes
// adapter needs to match client-go exactly and fast: keys hashed once from
// hashes of the event's fields, matched against the event's fields and
// built only when stored (Keyer); the count and first time of a new key
// taken from the value itself (Seed); a trimmed record of a value (Keep,
// of its own type L); a second clock reading for the spam filter
// (SpamClock); and, for correlate only, summaries of the values the spam
// filter skipped (Summaries), which the owner takes with Due and reports
// once it has released its lock.
//
// A Correlator is not safe for concurrent use: its owner locks, as
// golang-lru's Cache locks around simplelru.
package correlation

import (
	"math"
	"slices"
	"time"

	"golang.org/x/time/rate"

	"github.com/heraldgo/herald/internal/hashlru"
	"github.com/heraldgo/herald/internal/keyedlimit"
)

// Options configures a Correlator. Every function is required unless it
// says what a zero value means. The numbers must be positive where they
// are used: CacheSize always, MaxMembers and Window with Group, Burst with
// Spam; Rate must be positive with Spam (rate.Inf never skips): the spam
// buckets are ratelimit.Limiter's core, whose New takes no other.
//
// The Hash functions, Member, Combine and the clock may run the user's
// code: they run before Correlate changes anything, so that a panic in any
// of them leaves the Correlator as it was. Match, Make, Seed and Keep also
// run while it commits, and must not panic.
type Options[T any, K comparable, M comparable, L any] struct {
	// Key is the key of a value, under which it is counted.
	Key Keyer[T, K]
	// Group is the key of a value's group, and Member the key that tells
	// it from the group's other members. Zero: no groups.
	Group  Keyer[T, K]
	Member func(v T) M
	// Combine builds a full group's stand-in from the value that filled
	// it. nil: that value stands in.
	Combine func(trigger T, now time.Time) T
	// Spam is the key of a value's token bucket; the value may be a
	// stand-in. Zero: no spam filter.
	Spam Keyer[T, K]
	// Seed returns the count and first time of a key seen for the first
	// time (or forgotten). nil: 1 and now.
	Seed func(v T, now time.Time) (count int, first time.Time)
	// Keep returns what to remember of a new value as Observation.Last.
	Keep func(v T) L
	// SpamClock makes Correlate read the clock a second time, for the
	// spam filter, as client-go does.
	SpamClock bool
	// Summaries keeps, for each key, the values the spam filter skipped
	// since the key's last recorded result, so that none goes unreported:
	// a summary of them is due when the key is forgotten (Due) or when
	// the owner asks (Flush). Off: skipped values are only counted.
	Summaries bool

	CacheSize  int           // entries in each cache
	MaxMembers int           // distinct members that make a group full
	Window     time.Duration // how long a group lives after its last member; <= 0: a group lives while time stands still
	Burst      int           // tokens in a spam bucket
	Rate       rate.Limit    // refill of a spam bucket, tokens per second
	Clock      Clock
}

// Correlator is the engine. Its zero value is not usable: create one with
// New.
type Correlator[T any, K comparable, M comparable, L any] struct {
	key, group, spamKey Keyer[T, K]
	member              func(T) M
	combine             func(T, time.Time) T
	seed                func(T, time.Time) (int, time.Time)
	keep                func(T) L
	spamClock           bool
	summaries           bool
	maxMembers          int
	window              time.Duration
	clock               Clock

	groups *hashlru.Cache[K, group[M]]
	obs    *hashlru.Cache[obsKey[K], entry[T, L]]
	size   int                    // of each cache
	spam   *keyedlimit.Buckets[K] // by the Spam keyer's hashes; nil without Options.Spam
	// spamOf is the value whose spam bucket commit takes a token from,
	// and spamMatch and spamMake its spam key's Match and Make: made once,
	// so that the call to spam allocates no closure.
	spamOf    T
	spamMatch func(*K) bool
	spamMake  func() K
	stats     Stats
	// due are the summaries made since the owner last took them (Due).
	due []Summary[T, K]
}

// entry is what the engine keeps under one key: the Observation, and the
// values skipped since the key's last report, with Options.Summaries.
type entry[T, L any] struct {
	Observation[L]
	pend *pending[T] // nil until the key's first skipped value; kept for reuse
}

// group is a group's members and the time of its last value. The members
// are a ring, least recently seen first from head: a full group's new
// member takes the place of its least recently seen one, with no copying.
type group[M comparable] struct {
	members []M
	head    int // where the least recently seen member is
	last    time.Time
}

// obsKey tells a group key from a value key even when they are equal
// values of K, so that a group's count never mixes with a value's.
type obsKey[K any] struct {
	k        K
	combined bool
}

// New returns a Correlator configured by o. It panics on a missing
// required function or clock and on a number below 1 that is used (the
// group settings with Group, the spam settings with Spam): the callers
// check what their users give.
func New[T any, K comparable, M comparable, L any](o Options[T, K, M, L]) *Correlator[T, K, M, L] {
	grouped, spam := o.Group.Hash != nil, o.Spam.Hash != nil
	switch {
	case !o.Key.set() || o.Keep == nil || o.Clock == nil || o.CacheSize < 1:
		panic("correlation: incomplete Options")
	case grouped && (!o.Group.set() || o.Member == nil || o.MaxMembers < 1):
		panic("correlation: incomplete group Options")
	case spam && (!o.Spam.set() || o.Burst < 1 || !(o.Rate > 0)):
		panic("correlation: incomplete spam Options")
	}
	c := &Correlator[T, K, M, L]{
		key:        o.Key,
		group:      o.Group,
		spamKey:    o.Spam,
		member:     o.Member,
		combine:    o.Combine,
		seed:       o.Seed,
		keep:       o.Keep,
		spamClock:  o.SpamClock,
		summaries:  o.Summaries,
		maxMembers: o.MaxMembers,
		window:     o.Window,
		clock:      o.Clock,
		groups:     hashlru.New[K, group[M]](o.CacheSize),
		obs:        hashlru.New[obsKey[K], entry[T, L]](o.CacheSize),
		size:       o.CacheSize,
	}
	if spam {
		c.spam = keyedlimit.New[K](o.Rate, o.Burst, o.CacheSize)
		c.spamMatch = func(k *K) bool { return c.spamKey.Match(c.spamOf, k) }
		c.spamMake = func() K { return c.spamKey.Make(c.spamOf) }
	}
	return c
}

// plan is what one Correlate call decided before changing anything.
type plan[M comparable] struct {
	now     time.Time
	h       uint64    // the hash of the key counted under, the value's or its group's
	gh      uint64    // the group key's hash
	m       M         // the member key
	grp     *group[M] // the group as it is, nil if unknown
	fresh   bool      // the group starts afresh: unknown, or its window lapsed
	at      int       // m's place in the group's ring of members, or -1
	full    bool      // the group is full with m: the value is combined
	skh     uint64    // the spam key's hash
	spamNow time.Time // the time the spam bucket is taken at
}

// Correlate decides what to record for v: group, observe, spam filter, in
// client-go's order. It happens in two phases. The plan runs every
// function of Options that may run the user's code and reads the caches
// without changing them; the commit then changes the caches and counters,
// and calls no function that may panic. So a Correlate call either has all
// its effects or, having panicked, none but Stats.Panics: it then returns
// a zero Result and the panic, with the function that panicked.
func (c *Correlator[T, K, M, L]) Correlate(v T) (res Result[T, L], panicked *Panic) {
	var p plan[M]
	if panicked = c.plan(v, &res, &p); panicked != nil {
		c.stats.Panics++
		return Result[T, L]{}, panicked
	}
	c.commit(v, &res, &p)
	return res, nil
}

// plan fills p, res.Event and res.Combined, and returns a panic in the
// functions it calls, or nil.
func (c *Correlator[T, K, M, L]) plan(v T, res *Result[T, L], p *plan[M]) (panicked *Panic) {
	running := FuncClock // the function being called, for a panic to name
	defer func() {
		if r := recover(); r != nil {
			panicked = &Panic{Func: running, Value: r}
		}
	}()
	p.now = c.clock.Now()
	res.Event = v
	running = FuncKey
	p.h = c.key.Hash(v) // client-go computes the value's key first too
	if c.group.Hash != nil {
		running = FuncGroup
		p.gh = c.group.Hash(v)
		running = FuncMember
		p.m = c.member(v)
		running = FuncGroup
		p.grp, _ = c.groups.Peek(p.gh, func(k *K) bool { return c.group.Match(v, k) })
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
			p.h = ^p.gh // spread group keys away from equal value keys
			res.Combined = true
			if c.combine != nil {
				running = FuncCombine
				res.Event = c.combine(v, p.now)
			}
		}
	}
	if c.spamKey.Hash != nil {
		running = FuncSpam
		p.skh = c.spamKey.Hash(res.Event)
		p.spamNow = p.now
		if c.spamClock {
			running = FuncClock
			p.spamNow = c.clock.Now()
		}
	}
	return nil
}

// commit applies p for v: the group gains its member, the count goes up
// or starts, the spam bucket gives a token or the occurrence is skipped.
func (c *Correlator[T, K, M, L]) commit(v T, res *Result[T, L], p *plan[M]) {
	if c.group.Hash != nil {
		c.join(v, p)
	}

	// The key counted under: v's, or v's group's when combined.
	keyer, combined := &c.key, res.Combined
	if combined {
		keyer = &c.group
	}
	e, hit := c.find(p.h,
		func(k *obsKey[K]) bool { return k.combined == combined && keyer.Match(v, &k.k) },
		func() obsKey[K] { return obsKey[K]{k: keyer.Make(v), combined: combined} })
	o := &e.Observation
	repeat := hit && o.Count > 0
	if repeat {
		res.Previous = *o
		if o.Count < math.MaxInt { // a count Stored set there stays: it never wraps to a negative one
			o.Count++
		}
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
		c.spamOf = res.Event
		res.Skip = !c.spam.Allow(p.skh, c.spamMatch, c.spamMake, p.spamNow)
		var none T
		c.spamOf = none // keeps no value alive
	}
	if c.summaries {
		c.pend(e, res, repeat, p.now)
	}

	if res.Combined {
		c.stats.Combined++
	}
	if res.Skip {
		c.stats.Skipped++
	}
}

// join adds p's member to v's group as planned; when the group is full,
// its least recently seen member is forgotten to keep it below MaxMembers.
func (c *Correlator[T, K, M, L]) join(v T, p *plan[M]) {
	rec := p.grp
	if rec == nil {
		rec, _ = c.groups.Add(p.gh, c.group.Make(v)) // may reuse a forgotten group's members
	} else {
		c.groups.Touch(p.gh) // found by plan's Peek: mark it used
	}
	if p.fresh {
		clear(rec.members) // drop references for the garbage collector
		rec.members, rec.head = rec.members[:0], 0
	}
	rec.last = p.now
	ms, n := rec.members, len(rec.members)
	switch {
	case p.at >= 0:
		// Seen again: it becomes the most recently seen, and the ones
		// seen after it move back by one place.
		newest := (rec.head + n - 1) % n
		for i := p.at; i != newest; i = (i + 1) % n {
			ms[i] = ms[(i+1)%n]
		}
		ms[newest] = p.m
	case p.full:
		// A new member of a full group takes the place of the least
		// recently seen, which is forgotten, to stay below MaxMembers
		// (a member seen again never fills a group, which holds at
		// most MaxMembers-1). With MaxMembers 1 there is none: the
		// member is not kept.
		if n > 0 {
			ms[rec.head] = p.m
			rec.head = (rec.head + 1) % n
		}
	default:
		// Not full: the ring has not turned (a group grows only from
		// fresh, and is full before it would turn).
		rec.members = append(ms, p.m)
	}
}

// Stored replaces what is remembered under a value key (never a group
// key) with obs, and marks it most recently used. The key is given as for
// a lookup: its hash h, match to recognize it, key to build it.
func (c *Correlator[T, K, M, L]) Stored(h uint64, match func(*K) bool, key func() K, obs Observation[L]) {
	e, _ := c.find(h,
		func(k *obsKey[K]) bool { return !k.combined && match(&k.k) },
		func() obsKey[K] { return obsKey[K]{k: key()} })
	e.Observation = obs // what was skipped and not reported stays so
}

// Stats returns the counters; Evicted counts observations forgotten.
func (c *Correlator[T, K, M, L]) Stats() Stats {
	s := c.stats
	s.Correlated = s.New + s.Repeats // every commit counts one of them
	s.Evicted += c.obs.Evicted()
	return s
}

// find returns the entry of the key whose hash is h and which match
// accepts, marked most recently used, and whether it was there; if not,
// it adds key() with a zero entry, first forgetting the least recently
// used key if the cache is full (and, with Options.Summaries, making the
// summary of what it skipped unreported).
func (c *Correlator[T, K, M, L]) find(h uint64, match func(*obsKey[K]) bool, key func() obsKey[K]) (*entry[T, L], bool) {
	if !c.summaries {
		// Nothing to report of a key forgotten: the cache forgets it
		// itself, in the same lookup (the caller sets the Observation of
		// a new key whole, and pend stays nil).
		e, found, _ := c.obs.GetOrAdd(h, match, key)
		return e, found
	}
	if e, ok := c.obs.Get(h, match); ok {
		return e, true
	}
	if c.obs.Len() >= c.size {
		k, old, _ := c.obs.RemoveOldest()
		c.stats.Evicted++
		if old.pend != nil && old.pend.n > 0 {
			c.summarize(k, &old, true)
		}
	}
	e, recycled := c.obs.Add(h, key())
	if recycled {
		pend := e.pend // keep the buffer, emptied
		if pend != nil {
			*pend = pending[T]{}
		}
		*e = entry[T, L]{pend: pend}
	}
	return e, false
}
