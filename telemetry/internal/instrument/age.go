package instrument

import (
	"sync"
	"time"

	"github.com/heraldgo/herald/broadcast"
)

// How the oldest value's age is measured
//
// broadcast numbers the values that enter a watcher's queue and reports,
// in a Backlog, how many have entered and how many wait: the value in
// front is number Entered-Queued. At every collection, a trail remembers
// the first collection that saw each new Entered count. The value in front
// entered after the last mark that had not counted it and by the first
// that had: its age is at least the time since that mark. So the age is
// exact to one collection interval, costs broadcast nothing per value
// (no time stamp is taken on the hot path), and errs low, never high: a
// value that entered before the first collection that saw its watcher is
// counted from that collection.

// maxMarks bounds a trail: beyond it every second mark but the first is
// forgotten, so a watcher stuck for many collections costs a fixed amount
// of memory and its age keeps its lower bound at a coarser resolution.
const maxMarks = 64

// A mark is one collection that saw entered values in a queue.
type mark struct {
	entered uint64
	at      time.Time
}

// A trail follows one watcher's queue from collection to collection.
type trail struct {
	marks []mark // entered rises from mark to mark
	gen   uint64 // the last collection that saw the watcher
}

// observe records bl, read at now, and returns how long the value in front
// of the queue has been in it at least; 0 for an empty queue.
func (tr *trail) observe(now time.Time, bl broadcast.Backlog) time.Duration {
	if n := len(tr.marks); n == 0 || bl.Entered > tr.marks[n-1].entered {
		if n == maxMarks {
			tr.thin()
		}
		tr.marks = append(tr.marks, mark{bl.Entered, now})
	}
	var front uint64 // the number of the value in front
	if q := uint64(bl.Queued); q < bl.Entered {
		front = bl.Entered - q
	}
	// Marks that had not counted the value in front are of no more use.
	i := 0
	for i < len(tr.marks)-1 && tr.marks[i].entered <= front {
		i++
	}
	tr.marks = tr.marks[:copy(tr.marks, tr.marks[i:])]
	if bl.Queued == 0 {
		return 0
	}
	return now.Sub(tr.marks[0].at)
}

// thin forgets every second mark after the first. The values that entered
// by a forgotten mark are dated by the next one: later, so ages err low.
func (tr *trail) thin() {
	k := 1
	for i := 2; i < len(tr.marks); i += 2 {
		tr.marks[k] = tr.marks[i]
		k++
	}
	tr.marks = tr.marks[:k]
}

// Ages keeps the trails of one registration's watchers. Collections may
// run concurrently (one per reader), hence the lock.
type Ages struct {
	now func() time.Time // time.Now; tests set their own

	mu      sync.Mutex // guards gen, trails, scratch
	gen     uint64
	trails  map[uint64]*trail // by Backlog.Watcher
	scratch []broadcast.Backlog
}

// NewAges returns the Ages of one registration.
func NewAges() *Ages {
	return &Ages{now: time.Now, trails: make(map[uint64]*trail)}
}

// Backlog is what a registration reports of its watchers' queues.
type Backlog struct {
	Deepest int     // the most values waiting in one queue
	Oldest  float64 // the longest wait of a value in front of a queue, in seconds
}

// Observe reads the backlogs that read appends, at one instant, and forgets
// the trails of watchers that are gone.
func (a *Ages) Observe(read func([]broadcast.Backlog) []broadcast.Backlog) Backlog {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.scratch = read(a.scratch[:0])
	now := a.now()
	a.gen++
	var out Backlog
	var oldest time.Duration
	for _, bl := range a.scratch {
		tr := a.trails[bl.Watcher]
		if tr == nil {
			tr = &trail{}
			a.trails[bl.Watcher] = tr
		}
		tr.gen = a.gen
		oldest = max(oldest, tr.observe(now, bl))
		out.Deepest = max(out.Deepest, bl.Queued)
	}
	for id, tr := range a.trails {
		if tr.gen != a.gen {
			delete(a.trails, id)
		}
	}
	out.Oldest = oldest.Seconds()
	return out
}
