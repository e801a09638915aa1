package k8sadapter

import (
	"math"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/heraldgo/herald/internal/correlation"
)

// client-go's correlator defaults (tools/record/events_cache.go).
const (
	defaultLRUCacheSize         = 4096
	defaultBurstSize            = 25
	defaultMaxEvents            = 10
	defaultMaxIntervalInSeconds = 600
)

// defaultQPS is client-go's float32 1/300, converted as client-go converts
// it: the refill time is 299.99999 s, not 300 s.
var defaultQPS float32 = 1. / 300.

// neverRefill is the spam rate that stands for a negative QPS, with which
// x/time/rate, client-go's token bucket, never refills a bucket: the
// buckets here are a ratelimit.Limiter's, which takes positive rates only,
// and at the smallest one a bucket gains less than 10^-300 tokens in the
// longest time.Duration, which no refill reaches (FuzzLimiterMatchesRate
// in package ratelimit compares the two).
const neverRefill rate.Limit = math.SmallestNonzeroFloat64

// The engine's keys of the default functions.
var (
	eventKeyer = correlation.Keyer[*item, key]{
		Hash:  func(it *item) uint64 { return eventHash(&it.f) },
		Match: func(it *item, k *key) bool { return isEventKey(it.e, k) },
		Make:  func(it *item) key { return eventKey(it.e) },
	}
	groupKeyer = correlation.Keyer[*item, key]{
		Hash:  func(it *item) uint64 { return groupHash(&it.f) },
		Match: func(it *item, k *key) bool { return isGroupKey(it.e, k) },
		Make:  func(it *item) key { return groupKey(it.e) },
	}
	spamKeyer = correlation.Keyer[*item, key]{
		Hash:  func(it *item) uint64 { return spamHash(&it.f) },
		Match: func(it *item, k *key) bool { return isSpamKey(it.e, k) },
		Make:  func(it *item) key { return spamKey(it.e) },
	}
)

// messageMember tells the members of a default group apart by message.
func messageMember(it *item) member { return member{h: it.f.message, s: it.e.Message} }

// NewEventCorrelator returns a correlator with client-go's defaults, reading
// time from c.
func NewEventCorrelator(c clock.PassiveClock) *EventCorrelator {
	return NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: c})
}

// NewEventCorrelatorWithOptions returns a correlator configured as client-go
// configures one from o: zero fields take the defaults (LRU 4096 entries per
// cache, burst 25, 1/300 tokens per second, 10 distinct messages within 600
// s before events are combined). Out-of-range numbers behave as in
// client-go, which takes them as unsigned: a negative MaxEvents never
// combines (a KeyFunc is still called on every event); a negative or huge
// MaxIntervalInSeconds starts every group afresh (so that MaxEvents 1
// combines every event); a negative QPS never refills a spam bucket
// (BurstSize events, then none), and a NaN QPS never skips an event. A
// negative LRUCacheSize or BurstSize means the default.
func NewEventCorrelatorWithOptions(o record.CorrelatorOptions) *EventCorrelator {
	o = withDefaults(o)
	ec := &EventCorrelator{
		msg:      o.MessageFunc,
		ownMsg:   o.MessageFunc != nil,
		userCode: o.MessageFunc != nil || o.KeyFunc != nil || o.SpamKeyFunc != nil,
	}
	if ec.msg == nil {
		ec.msg = record.EventAggregatorByReasonMessageFunc
	}
	opts := correlation.Options[*item, key, member, last]{
		Key:     eventKeyer,
		Group:   groupKeyer,
		Member:  messageMember,
		Combine: ec.combine,
		Spam:    spamKeyer,
		Seed:    seed,
		Keep:    ec.keep,
		// client-go reads the clock for the aggregator and again for the
		// spam filter; a clock that moves on every reading tells the two
		// apart. The system clock's second reading is a few nanoseconds
		// later, which no decision can tell from the first: it is read
		// once.
		SpamClock:  !isRealClock(o.Clock),
		CacheSize:  o.LRUCacheSize,
		MaxMembers: o.MaxEvents,
		// client-go's arithmetic, through uint and with its overflow: a
		// negative or huge interval wraps to a window no interval exceeds
		// less than, so every group starts afresh.
		Window: time.Duration(uint(o.MaxIntervalInSeconds)) * time.Second,
		Burst:  o.BurstSize,
		Rate:   spamRate(o.QPS),
		Clock:  o.Clock,
	}
	if f := o.SpamKeyFunc; f != nil {
		opts.Spam = customSpamKeyer(f)
	}
	if f := o.KeyFunc; f != nil {
		ec.useKeyFunc(&opts, f, o.MaxEvents < 0)
	}
	if o.MaxEvents < 0 {
		// client-go's uint makes it huge: no group is ever full.
		opts.Group, opts.Member = correlation.Keyer[*item, key]{}, nil
	}
	ec.engine = correlation.New(opts)
	return ec
}

// withDefaults returns o with client-go's defaults in its zero fields,
// and herald's for a negative LRUCacheSize or BurstSize.
func withDefaults(o record.CorrelatorOptions) record.CorrelatorOptions {
	if o.LRUCacheSize <= 0 {
		o.LRUCacheSize = defaultLRUCacheSize
	}
	if o.BurstSize <= 0 {
		o.BurstSize = defaultBurstSize
	}
	if o.QPS == 0 {
		o.QPS = defaultQPS
	}
	if o.MaxEvents == 0 {
		o.MaxEvents = defaultMaxEvents
	}
	if o.MaxIntervalInSeconds == 0 {
		o.MaxIntervalInSeconds = defaultMaxIntervalInSeconds
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

// spamRate is the rate of the spam buckets for a QPS that is not zero,
// as x/time/rate takes client-go's: +Inf and NaN never skip an event
// (rate.Inf), and a negative QPS never refills a bucket (neverRefill).
func spamRate(qps float32) rate.Limit {
	switch q := float64(qps); {
	case math.IsInf(q, 1) || math.IsNaN(q):
		return rate.Inf
	case q < 0:
		return neverRefill
	}
	return rate.Limit(qps)
}

// customSpamKeyer keys the spam buckets by the string f returns.
func customSpamKeyer(f record.EventSpamKeyFunc) correlation.Keyer[*item, key] {
	return correlation.Keyer[*item, key]{
		Hash:  func(it *item) uint64 { it.spam = f(it.e); return customHash(kindCustomSpam, it.spam) },
		Match: func(it *item, k *key) bool { return k.custom == it.spam },
		Make:  func(it *item) key { return key{custom: it.spam} },
	}
}

// useKeyFunc groups events by the strings f returns. client-go takes the
// event's key before it calls KeyFunc, and the spam key and a combined
// event from the event after: a KeyFunc that writes the event changes
// those, not the former. So the event key is kept as it was, and the
// fields are hashed again once the function has run. With noGroups (a
// negative MaxEvents) no group is ever full, but client-go still calls
// KeyFunc on every event, after it takes the event's key.
func (c *EventCorrelator) useKeyFunc(opts *correlation.Options[*item, key, member, last], f record.EventAggregatorKeyFunc, noGroups bool) {
	keyFunc := func(it *item) {
		it.group, it.member = f(it.e)
		it.f = c.hasher.hash(it.e)
	}
	opts.Key = correlation.Keyer[*item, key]{
		Hash:  func(it *item) uint64 { it.key = eventKey(it.e); return eventHash(&it.f) },
		Match: func(it *item, k *key) bool { return *k == it.key },
		Make:  func(it *item) key { return it.key },
	}
	opts.Group = correlation.Keyer[*item, key]{
		Hash:  func(it *item) uint64 { keyFunc(it); return customHash(kindCustomGroup, it.group) },
		Match: func(it *item, k *key) bool { return k.custom == it.group },
		Make:  func(it *item) key { return key{custom: it.group} },
	}
	opts.Member = func(it *item) member { return member{h: hashString(it.member), s: it.member} }
	if noGroups {
		hash := opts.Key.Hash
		opts.Key.Hash = func(it *item) uint64 { h := hash(it); keyFunc(it); return h }
	}
}

// isRealClock reports whether c is the system clock.
func isRealClock(c clock.PassiveClock) bool {
	switch c.(type) {
	case clock.RealClock, *clock.RealClock:
		return true
	}
	return false
}
