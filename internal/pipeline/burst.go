package pipeline

import (
	"sync"
	"time"
)

// BurstInterval is how often a Burst lets a repeated condition be logged.
const BurstInterval = 10 * time.Second

// Burst is the drop-log policy of both adapters: one log line per burst
// of a condition that can repeat thousands of times a second (an event
// dropped at a full queue, or recorded after shutdown), with a count. The
// first occurrence after a quiet BurstInterval is logged at once; the
// occurrences that follow within BurstInterval are only counted, and the
// next line reports them all. Rest hands the ones no line reported to a
// last line, at shutdown. Its zero value is ready to use; it is safe for
// concurrent use.
type Burst struct {
	mu         sync.Mutex // guards last, unreported
	last       time.Time  // when the last line was due
	unreported uint64     // occurrences since then
}

// Add counts n occurrences at now. It reports whether a line is due, and
// the count that line reports: every occurrence since the last line,
// these included.
func (b *Burst) Add(now time.Time, n uint64) (count uint64, due bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.unreported += n
	if !b.last.IsZero() && now.Sub(b.last) < BurstInterval {
		return 0, false
	}
	count, b.unreported, b.last = b.unreported, 0, now
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
