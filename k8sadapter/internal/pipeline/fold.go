package pipeline

import (
	"sync"
	"sync/atomic"

	"github.com/heraldgo/herald/internal/ring"
	"github.com/heraldgo/herald/internal/wait"
)

// Fold is one sink's queue: the events the recorders hand it wait there,
// in order, for the sink's goroutine. Unlike a watcher's queue it folds:
// an event its rule lets join the newest waiting entry of its key (a
// repeat) is counted into that entry instead of taking a place. Its
// capacity counts entries, so a burst of repeats costs memory by the
// number of distinct waiting events, not by the number of calls, and
// what overflows is only distinct events beyond the capacity.
//
// Recorders call Offer on their own goroutines. It computes the key
// outside the lock and runs Folding.Fold under it: a few comparisons,
// no I/O, no allocation per repeat (BenchmarkFoldOffer). One goroutine
// takes the entries (Take), in the order of their first event, and hands
// each back (Done) once every event in it is dealt with. A Fold is safe
// for concurrent use; its zero value is not usable: create one with
// Pipeline.NewFold.
type Fold[E Event, K comparable, P any] struct {
	rule  Folding[E, K, P]
	ready chan struct{} // capacity 1: an entry was queued, or the Fold closed

	// Written under mu, read without it (Tally, Flush).
	delivered, dropped, folded, abandoned atomic.Uint64

	mu     sync.Mutex // guards closed, newest, queue and free
	closed bool
	newest map[K]*Entry[E, K, P]      // the newest waiting entry of each key
	queue  ring.Ring[*Entry[E, K, P]] // the waiting entries, oldest first, at most the limit
	free   []*Entry[E, K, P]          // entries handed back, for reuse
}

// Folding says which events fold into which, in a sink's queue: the part
// of an Adapter a Fold uses.
type Folding[E Event, K comparable, P any] interface {
	// FoldKey returns the key under which ev may fold into a waiting
	// entry, and false if ev never folds. It runs without the Fold's
	// lock.
	FoldKey(ev E) (K, bool)
	// Fold folds ev into w, the newest waiting entry with ev's key, and
	// reports whether it did; if not, ev takes an entry of its own, which
	// becomes the newest of its key. It runs under the Fold's lock: it
	// must be short and must not block.
	Fold(w *Entry[E, K, P], ev E) bool
	// ResetEntry readies the Data of an entry handed back for reuse.
	ResetEntry(d *P)
}

// Entry is a waiting event and the repeats folded into it.
type Entry[E Event, K comparable, P any] struct {
	// First is the event that took the entry.
	First E
	// Events counts the events in the entry, First included.
	Events int
	// Data is what Folding.Fold keeps of the events folded in.
	Data P
	// Key is First's key, if FoldKey gave it one.
	Key K

	seq   uint64 // position of First among the events delivered
	keyed bool   // newest[Key] may be this entry
}

// Offered is what Offer did with an event.
type Offered int

const (
	// Queued: the event took an entry of its own.
	Queued Offered = iota
	// Folded: the event was folded into a waiting entry.
	Folded
	// Full: the event was refused, the Fold holds its capacity of entries.
	Full
	// Closed: the event was refused, the Fold is closed.
	Closed
)

// newFold returns an empty Fold of at most limit waiting entries (at
// least 1), folding by rule.
func newFold[E Event, K comparable, P any](limit int, rule Folding[E, K, P]) *Fold[E, K, P] {
	return &Fold[E, K, P]{
		rule:   rule,
		ready:  make(chan struct{}, 1),
		newest: make(map[K]*Entry[E, K, P]),
		queue:  ring.New[*Entry[E, K, P]](max(limit, 1)),
	}
}

// Offer queues ev, folded into a waiting entry if the Folding allows it.
// Delivered counts it unless it is refused: Dropped counts a refusal for
// a full Fold; a refusal once the Fold is closed is not counted (nobody
// is owed the event).
func (f *Fold[E, K, P]) Offer(ev E) Offered {
	k, keyed := f.rule.FoldKey(ev)
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return Closed
	}
	if keyed {
		if w := f.newest[k]; w != nil && f.rule.Fold(w, ev) {
			f.foldedLocked(w)
			f.mu.Unlock()
			return Folded
		}
	}
	if f.queue.Free() == 0 {
		f.dropped.Add(1)
		f.mu.Unlock()
		return Full
	}
	w := f.allocLocked()
	w.First, w.Events, w.seq = ev, 1, f.delivered.Load()
	if keyed {
		w.Key, w.keyed = k, true
		f.newest[k] = w
	}
	f.delivered.Add(1)
	wake := f.queue.Len() == 0 // the taker waits only once it found none
	f.queue.Push(w)
	f.mu.Unlock()
	if wake {
		wait.Signal(f.ready)
	}
	return Queued
}

// tryFold folds an event of key k that the caller has not built into the
// newest waiting entry of k, if fold (which runs under the Fold's lock,
// as Folding.Fold does) says it may, and reports whether it did. If not,
// or if no entry of k waits, it does nothing: the caller builds the event
// and offers it.
func (f *Fold[E, K, P]) tryFold(k K, fold func(w *Entry[E, K, P]) bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	w := f.newest[k]
	if w == nil || !fold(w) {
		return false
	}
	f.foldedLocked(w)
	return true
}

// foldedLocked counts an event folded into w.
func (f *Fold[E, K, P]) foldedLocked(w *Entry[E, K, P]) {
	w.Events++
	f.delivered.Add(1)
	f.folded.Add(1)
}

// allocLocked returns a recycled entry, or a new one. At most limit
// entries wait and one is being dealt with, so the Fold never makes more
// than limit+1.
func (f *Fold[E, K, P]) allocLocked() *Entry[E, K, P] {
	if n := len(f.free); n > 0 {
		w := f.free[n-1]
		f.free = f.free[:n-1]
		return w
	}
	return new(Entry[E, K, P])
}

// Take removes the oldest waiting entry and returns it; nothing folds
// into it any more. With none waiting it returns nil, and whether the
// Fold is closed (then none ever will).
func (f *Fold[E, K, P]) Take() (w *Entry[E, K, P], closed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.queue.Len() == 0 {
		return nil, f.closed
	}
	w = f.queue.Pop()
	if w.keyed && f.newest[w.Key] == w {
		delete(f.newest, w.Key)
	}
	return w, false
}

// Done hands back w, taken by Take and dealt with, for reuse. It returns
// how many of the events delivered so far are dealt with: those before
// the first event of the oldest waiting entry (entries are taken in the
// order of their first event, and only the taker deals with them), or
// all of them if none waits.
func (f *Fold[E, K, P]) Done(w *Entry[E, K, P]) uint64 {
	f.reset(w)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.free = append(f.free, w)
	if f.queue.Len() > 0 {
		return f.queue.Peek().seq
	}
	return f.delivered.Load()
}

// reset empties w for reuse.
func (f *Fold[E, K, P]) reset(w *Entry[E, K, P]) {
	var zeroE E
	var zeroK K
	w.First, w.Events, w.Key, w.keyed = zeroE, 0, zeroK, false
	f.rule.ResetEntry(&w.Data)
}

// Abandon closes the Fold and removes every waiting entry, unhandled: a
// shutdown whose deadline passed gives up on them. Abandoned counts their
// events from then on, so that the owner's counters are right as soon as
// Abandon returns, even while its goroutine is stuck in a call. It
// returns how many events it abandoned.
func (f *Fold[E, K, P]) Abandon() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	var n uint64
	for f.queue.Len() > 0 {
		w := f.queue.Pop()
		n += uint64(w.Events)
		f.reset(w)
		f.free = append(f.free, w)
	}
	clear(f.newest)
	f.abandoned.Add(n)
	wait.Signal(f.ready)
	return n
}

// Close makes Offer refuse from now on; what waits can still be taken.
// It is idempotent.
func (f *Fold[E, K, P]) Close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	wait.Signal(f.ready)
}

// Ready receives a value after an entry was queued into an empty Fold, or
// the Fold closed: a goroutine that found nothing to Take waits on it. A
// value may be stale: Take again, and wait again if it finds nothing.
func (f *Fold[E, K, P]) Ready() <-chan struct{} { return f.ready }

// Delivered counts the events accepted so far, folded ones included.
func (f *Fold[E, K, P]) Delivered() uint64 { return f.delivered.Load() }

// Dropped counts the events refused for a full Fold.
func (f *Fold[E, K, P]) Dropped() uint64 { return f.dropped.Load() }

// Folded counts the events folded into a waiting entry (Delivered counts
// them too).
func (f *Fold[E, K, P]) Folded() uint64 { return f.folded.Load() }

// Abandoned counts the events Abandon removed.
func (f *Fold[E, K, P]) Abandoned() uint64 { return f.abandoned.Load() }
