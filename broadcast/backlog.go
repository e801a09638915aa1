package broadcast

import "sync"

// Backlogs: a read-only view of what waits in the queues, for metrics. It
// costs nothing per value: Watch and the close of a watcher each update a
// set of open watchers (under a lock of its own, which nothing else is
// taken under but a watcher's mutex), and the readers below take the locks
// the queues already have.

// Backlog is where one watcher's queue stands at one instant. The values
// that enter a watcher's queue are numbered from 0 in the order they
// enter, its prefix first; the queue holds those numbered Entered-Queued
// to Entered-1 (DropOldest discards from the front). Sampled over time,
// Entered tells when each value entered, so that a reader of Backlogs can
// tell how long the value in front has waited, at no cost per value.
type Backlog struct {
	// Watcher tells the watchers of one broadcaster apart: they are
	// numbered from 1 in the order Watch or WatchWith was called.
	Watcher uint64
	// Entered counts the values that have entered the queue: the prefix,
	// then what Delivered counts.
	Entered uint64
	// Queued is the number of values waiting to be read. Values an All
	// loop took and has not yielded yet are not queued; if the loop ends
	// early they are queued again.
	Queued int
}

// openSet holds a broadcaster's open watchers, for Backlogs.
type openSet[T any] struct {
	mu   sync.Mutex // guards last, open; taken before a watcher's queue's, never after
	last uint64     // the number of the last watcher registered
	open map[*Watcher[T]]struct{}
}

// add numbers w and records it as open.
func (s *openSet[T]) add(w *Watcher[T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == nil {
		s.open = make(map[*Watcher[T]]struct{})
	}
	s.last++
	w.id = s.last
	s.open[w] = struct{}{}
}

// len returns the number of open watchers.
func (s *openSet[T]) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// remove forgets w once it is closed.
func (s *openSet[T]) remove(w *Watcher[T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.open, w)
}

// Backlog returns where the watcher's queue stands now.
func (w *Watcher[T]) Backlog() Backlog {
	bl := Backlog{Watcher: w.id}
	if w.ch != nil {
		// The channel's length first: a value the distributor sends
		// meanwhile is counted in chDelivered after its send, so the
		// front errs towards newer, never towards a value already read.
		bl.Queued = len(w.ch)
		bl.Entered = w.prefix + w.chDelivered.Load()
		return bl
	}
	added, queued := w.q.Counts() // at one instant
	bl.Entered, bl.Queued = w.prefix+added, queued
	return bl
}

// Backlogs appends to dst the Backlog of every watcher registered and not
// yet closed, in no particular order, and returns the extended slice. It
// is safe to call at any time, also after Shutdown; it never waits for the
// distributor or for a reader, only for the locks they hold briefly.
func (b *Broadcaster[T]) Backlogs(dst []Backlog) []Backlog {
	s := &b.open
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.open {
		dst = append(dst, w.Backlog())
	}
	return dst
}

// Incoming returns the number of values accepted by Publish and TryPublish
// and not yet taken by the distributor: the depth of the incoming queue,
// at most Options.IncomingQueueLength.
func (b *Broadcaster[T]) Incoming() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}
