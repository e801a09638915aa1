package pipeline

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// stampWindow is how far back of the latest time Stamp was given a time
// may be and still be moved after the latest it returned: a clock that
// stands still or is coarse; a time further back (a past event, a clock
// set back) is stamped apart from the present (see Stamp).
const stampWindow = uint64(time.Millisecond)

// stamper moves the times event names are generated from apart (see
// Stamp). Its zero value is ready to use; it is safe for concurrent use.
type stamper struct {
	lastStamp, lastWant atomic.Int64 // the latest time returned, and the latest given
	past                pastStamps
}

// stamp returns t, unless an earlier call returned t, or a time less than
// a millisecond after it: then the nanosecond after the latest it
// returned. So the event names generated from its times differ: a fake
// clock that stands still, a coarse system clock or two past events at
// one time would give two events about one object the same name, and the
// server would refuse the second (AlreadyExists). The move is below the
// second, which the stored timestamps keep of core/v1 events, and the
// microsecond, which events.k8s.io/v1 keeps.
//
// A time a millisecond or more before the latest time Stamp was given (a
// past event, a clock set back) does not move the latest time returned,
// which events of the present go on from, however far a clock standing
// still has moved it ahead. Past times are kept apart from each other,
// whatever their order: one returned already, or given again, moves to
// the first nanosecond after it that no past time took. A time a
// millisecond or more after the latest (a clock stepped on, a past event
// given a time ahead of the clock) leaves that instant behind: the times
// returned from it on (those of a clock standing still there) are then
// kept apart from past times like past times, so that a clock that
// stands still again at that instant, or is set back to it, goes on
// after them. Stamp remembers the past times of the last maxPastRuns
// instants it was given or left behind; it does not remember the other
// times of the present it returned (those of instants less than a
// millisecond apart before the latest), so a past time that a clock gave
// an event at such an instant is returned as it is.
func (s *stamper) stamp(t time.Time) time.Time {
	want := t.UnixNano()
	latest := s.lastWant.Load()
	if isPast(want, latest) {
		return t.Add(time.Duration(s.past.stamp(want) - want))
	}
	leaves := isPast(latest, want)
	if leaves {
		// Under the lock of the past times, so that a past time stamped
		// once the latest time moved on finds the instant left behind.
		s.past.mu.Lock()
		if latest = s.lastWant.Load(); isPast(want, latest) {
			s.past.mu.Unlock()
			return t.Add(time.Duration(s.past.stamp(want) - want))
		}
		if leaves = isPast(latest, want); !leaves {
			s.past.mu.Unlock()
		}
	}
	// The latest time returned moves before the latest time given, so
	// that a time of the present stamped once the latest time given
	// moved is after it, and after every past time.
	var n int64
	for {
		last := s.lastStamp.Load()
		if n = want; n <= last {
			n = last + 1
		}
		if s.lastStamp.CompareAndSwap(last, n) {
			if leaves && last >= latest {
				s.past.addLocked(latest, last)
			}
			break
		}
	}
	for latest < want && !s.lastWant.CompareAndSwap(latest, want) {
		latest = s.lastWant.Load()
	}
	if leaves {
		s.past.mu.Unlock()
	}
	return t.Add(time.Duration(n - want))
}

// isPast reports whether want is a millisecond or more before latest:
// stamped apart from the present. The difference is taken unsigned, so
// that it holds however far apart the two times are.
func isPast(want, latest int64) bool {
	return want <= latest && uint64(latest-want) >= stampWindow
}

// maxPastRuns is how many runs of past times pastStamps remembers.
const maxPastRuns = 64

// pastStamps are the past times Stamp returned, as runs of consecutive
// nanoseconds: sorted, apart (a nanosecond no past time took lies between
// two), the least recently stamped forgotten beyond maxPastRuns.
type pastStamps struct {
	mu   sync.Mutex // guards runs and tick
	runs []pastRun
	tick uint64 // counts the stamps, to tell the least recently stamped run
}

// pastRun is a run of past times returned, lo to hi.
type pastRun struct {
	lo, hi int64
	used   uint64 // tick of the latest time stamped in it
}

// stamp returns want if no past time returned is want, or else the first
// nanosecond after the run holding it, and remembers it.
func (s *pastStamps) stamp(want int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick++
	// The first run not before want.
	i, _ := slices.BinarySearchFunc(s.runs, want, func(r pastRun, w int64) int { return cmp.Compare(r.hi, w) })
	n := want
	switch {
	case i < len(s.runs) && s.runs[i].lo <= want:
		n = s.runs[i].hi + 1
		s.runs[i].hi = n
	case i > 0 && s.runs[i-1].hi+1 == want:
		i--
		s.runs[i].hi = n
	default:
		s.runs = slices.Insert(s.runs, i, pastRun{lo: n, hi: n})
	}
	s.runs[i].used = s.tick
	if i+1 < len(s.runs) && s.runs[i+1].lo == n+1 {
		s.runs[i].hi = s.runs[i+1].hi
		s.runs = slices.Delete(s.runs, i+1, i+2)
	}
	s.forgetLocked()
	return n
}

// addLocked remembers lo to hi, the times of the present returned from an
// instant the present moved on from, as past times returned. The caller
// holds s.mu.
func (s *pastStamps) addLocked(lo, hi int64) {
	s.tick++
	// The runs that touch lo to hi, or lie a nanosecond from it, become
	// one.
	i, _ := slices.BinarySearchFunc(s.runs, lo, func(r pastRun, w int64) int { return cmp.Compare(r.hi, w-1) })
	j := i
	for j < len(s.runs) && s.runs[j].lo-1 <= hi {
		lo, hi = min(lo, s.runs[j].lo), max(hi, s.runs[j].hi)
		j++
	}
	s.runs = slices.Replace(s.runs, i, j, pastRun{lo: lo, hi: hi, used: s.tick})
	s.forgetLocked()
}

// forgetLocked drops the least recently stamped run beyond maxPastRuns.
func (s *pastStamps) forgetLocked() {
	if len(s.runs) > maxPastRuns {
		oldest := 0
		for j, r := range s.runs {
			if r.used < s.runs[oldest].used {
				oldest = j
			}
		}
		s.runs = slices.Delete(s.runs, oldest, oldest+1)
	}
}
