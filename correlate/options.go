package correlate

import (
	"time"

	"golang.org/x/time/rate"
)

// CombinedPrefix is a conventional start for the message of a combined
// stand-in: a Combine function for values with a message may set it to
// CombinedPrefix + the message of the value that filled the group.
const CombinedPrefix = "(combined from similar events): "

// Defaults of Options.
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
// decide what is similar; its numbers, when zero, take the defaults. The
// zero value counts exact repeats only: no groups, no spam filter.
//
// The functions run under the Correlator's lock, one call at a time, so
// they must be quick and must not call the Correlator. They should be
// deterministic. A function that panics makes that Correlate call return
// an error wrapping ErrPanic, and changes nothing.
type Options[T any, K comparable] struct {
	// Group returns the group key and member key of v. Values with the same
	// group key and different member keys are similar: once a group has
	// MaxMembers distinct members within Window, its combined stand-in is
	// recorded in their place. nil: no grouping.
	Group func(v T) (group, member K)
	// Combine builds the stand-in for a full group from the value that
	// filled it and the time Correlate read. nil: that value itself stands
	// in.
	Combine func(trigger T, now time.Time) T
	// Spam returns the key of v's token bucket; v may be a combined
	// stand-in. Values over their bucket's rate are skipped (and still
	// counted). nil: no spam filter.
	Spam func(v T) K

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
	// DefaultRate; rate.Inf: never skip. New panics if it is NaN (which
	// would never skip either, unnoticed).
	Rate rate.Limit
	// Clock tells the time. nil: the system clock.
	Clock Clock

	// Report receives the summaries of values the spam filter skipped and
	// no recorded result carried (see Summary): one per key, when the key
	// is forgotten to make room in the cache (on the goroutine of the
	// Correlate or Stored call that made room, before it returns) and for
	// every key with such values when the application calls Flush (on
	// Flush's goroutine). It runs outside the Correlator's lock, so it may
	// call the Correlator; it should not block, as the call that runs it
	// waits for it. Calls made on several goroutines at once may run it
	// at once. nil: the summaries are made and counted in Stats all the
	// same (Summarized), and handed to no one.
	Report func(Summary[T, K])
}
