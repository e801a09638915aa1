package correlate

import (
	"time"

	"golang.org/x/time/rate"
)

// CombinedPrefix starts the message of client-go's combined events. A
// Combine function for values with a message may use it the same way:
// CombinedPrefix + the message of the value that filled the group.
const CombinedPrefix = "(combined from similar events): "

// Defaults of Options, equal to client-go's EventCorrelator's.
const (
	// DefaultCacheSize is the number of entries in each of the three caches
	// (groups, observations, spam buckets).
	DefaultCacheSize = 4096
	// DefaultMaxMembers is how many distinct members a group reaches within
	// the window before it is combined.
	DefaultMaxMembers = 10
	// DefaultWindow is how long a group lives after its last member.
	DefaultWindow = 600 * time.Second
	// DefaultBurst is the size of each spam bucket.
	DefaultBurst = 25
	// DefaultRate refills each spam bucket with one token every 5 minutes.
	DefaultRate rate.Limit = 1.0 / 300
)

// Options configures a Correlator. It is passed by value. Its functions
// decide what is similar; its numbers, when zero, take client-go's
// defaults. The zero value counts exact repeats only: no groups, no spam
// filter.
//
// The functions run under the Correlator's lock, one call at a time, so
// they must be quick and must not call the Correlator. They should be
// deterministic. A function that panics makes that Correlate call return an
// error wrapping ErrPanic.
type Options[T any, K comparable] struct {
	// Group returns the group key and member key of v. Values with the same
	// group key and different member keys are similar: once a group has
	// MaxMembers distinct members within Window, its combined stand-in is
	// recorded in their place. nil: no grouping. (client-go: KeyFunc, by
	// default the source, object, type and reason as group and the message
	// as member.)
	Group func(v T) (group, member K)
	// Combine builds the stand-in for a full group from the value that
	// filled it and the time Correlate read. nil: that value itself stands
	// in. (client-go builds a new event with CombinedPrefix + message, a
	// count of 1 and both timestamps now.)
	Combine func(trigger T, now time.Time) T
	// Spam returns the key of v's token bucket; v may be a combined
	// stand-in. Values over their bucket's rate are skipped (and still
	// counted). nil: no spam filter. (client-go: SpamKeyFunc, by default the
	// source and the object.)
	Spam func(v T) K
	// Seed returns the count and first-seen time to record for a key seen
	// for the first time, or forgotten; v may be a combined stand-in. nil: 1
	// and now. (client-go takes the event's own count and first timestamp.)
	Seed func(v T, now time.Time) (count int, first time.Time)
	// Keep returns what to remember of a new value as Observation.Last:
	// only what a later repeat needs (an id, a version), so that the caches
	// do not hold whole events. nil: the value itself.
	Keep func(v T) T
	// Hash returns a hash of a key, equal for equal keys. A caller whose
	// keys are large structs can compute it once, from parts it already
	// hashed, and carry it in the key. nil: hash/maphash.Comparable.
	Hash func(k K) uint64

	// CacheSize is the number of entries in each of the three caches
	// (groups, observations, spam buckets); beyond it the least recently
	// used entry is forgotten. Zero: DefaultCacheSize.
	CacheSize int
	// MaxMembers is the number of distinct members within Window that makes
	// a group combined. Zero: DefaultMaxMembers.
	MaxMembers int
	// Window is how long a group lives: a value arriving more than Window
	// (strictly) after the group's last one starts the group afresh. Zero:
	// DefaultWindow.
	Window time.Duration
	// Burst is the size of each spam bucket, full when its key is first
	// seen. Zero: DefaultBurst.
	Burst int
	// Rate is the refill of each spam bucket, in tokens per second. Zero:
	// DefaultRate; rate.Inf: never skip.
	Rate rate.Limit
	// Clock tells the time. nil: the system clock.
	Clock Clock
}
