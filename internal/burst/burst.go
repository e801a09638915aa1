// Package burst is herald's policy for logging a condition that can repeat
// thousands of times a second (an event dropped at a full queue, a poison
// message, a lost consumer): one line per burst, with a count.
package burst

import (
	"sync"
	"time"
)

// DefaultInterval is the interval of a Burst whose Interval is zero.
const DefaultInterval = 10 * time.Second

// Burst lets a repeated condition be logged once per Interval. The first
// occurrence after a quiet Interval is logged at once; the occurrences
// that follow within Interval are only counted, and the next line reports
// them all. Rest hands the ones no line reported to a last line, at
// shutdown. Its zero value is ready to use; it is safe for concurrent use.
type Burst struct {
	// Interval is how often a line is let through. Zero means
	// DefaultInterval.
	Interval time.Duration

	mu         sync.Mutex // guards logged, last, unreported
	logged     bool       // a line was due: last holds when
	last       time.Time  // when the last line was due
	unreported uint64     // occurrences since then
}

// Add counts n occurrences at now. It reports whether a line is due, and
// the count that line reports: every occurrence since the last line,
// these included. A line is due when now is an Interval or more after the
// last line's time, or an Interval or more before it (a clock set back).
func (b *Burst) Add(now time.Time, n uint64) (count uint64, due bool) {
	interval := b.Interval
	if interval == 0 {
		interval = DefaultInterval
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.unreported += n
	// A flag, not a zero last: a clock may read the zero time (a fake
	// one that starts there), and then every occurrence would be due.
	// A time an Interval or more before the last line's is a clock set
	// back: a line is due, as after a quiet Interval. A time less before
	// it is one taken concurrently and counted a little late.
	if d := now.Sub(b.last); b.logged && d < interval && d > -interval {
		return 0, false
	}
	count, b.unreported, b.last, b.logged = b.unreported, 0, now, true
	return count, true
}

// Rest returns the occurrences no line has reported, and forgets them.
func (b *Burst) Rest() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.unreported
	b.unreported = 0
	return n
}
