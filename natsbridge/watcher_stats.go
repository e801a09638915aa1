package natsbridge

import "github.com/heraldgo/herald/broadcast"

// Backlog returns where the watcher's queue stands now, as
// broadcast.Watcher.Backlog: the values that entered it (its prefix, then
// what Stats().Delivered counts) and those still queued.
func (w *Watcher[T]) Backlog() broadcast.Backlog {
	s := w.Stats()
	return broadcast.Backlog{Watcher: 1, Entered: w.prefix + s.Delivered, Queued: s.Queued}
}

// WatcherStats is a snapshot of a Watcher's counters. For every watcher,
// the values owed to it (from Start on) are, at any snapshot, read by the
// application, queued, dropped, gaps, poison messages, handed back, or
// still with the feed.
type WatcherStats struct {
	// Delivered counts the values placed in the watcher's queue (a prefix
	// is not counted).
	Delivered uint64
	// Dropped counts the values its policy dropped (DropNewest,
	// DropOldest), and those read from the stream but not yet queued when
	// Stop came (logged; a watcher resumed from Seq()+1 reads them).
	Dropped uint64
	// Gaps counts the values owed that the stream no longer held when the
	// watcher came to read them (removed by retention, or deleted). Each
	// is counted once: when the watcher reads a later value or, for values
	// removed from the end of the stream, when Flush is called.
	Gaps uint64
	// Poisoned counts the messages the codec could not decode: each was
	// logged (with the others of its burst) and passed over by All, Next
	// and Events.
	Poisoned uint64
	// Restarts counts the times the watcher's consumer was lost and made
	// again where it stopped (nothing is lost or repeated by that). A
	// consumer lost for good (see Err) is not counted.
	Restarts uint64
	// Queued is the number of values waiting in the watcher's queue.
	Queued int

	// The counters of a durable watcher; zero for the others.

	// Redelivered counts the values this watcher handed to its
	// application that a reader of the same durable position may have
	// handed to its application before: a reader that died (or was
	// stopped, or lost its turn) before it had acknowledged them. It
	// never misses a value handed out twice, and counts at most the
	// values of one reservation more (see the package doc, "Durable
	// watchers"): about twice what that reader handed out in its last
	// 100ms, and at most 4096. Seq identifies each.
	Redelivered uint64
	// HandedBack counts the values read from the stream that this watcher
	// gave back to the server without handing them to its application:
	// what it held when it stopped or lost its turn. The next reader gets
	// them; none is lost.
	HandedBack uint64
	// Outstanding is the number of values handed to the application and
	// not yet done (see Watcher.Done).
	Outstanding int
	// Acked is the stream sequence the watcher acknowledged last: every
	// value up to it is done.
	Acked uint64
}

// Stats returns a snapshot of the watcher's counters.
func (w *Watcher[T]) Stats() WatcherStats {
	s := WatcherStats{
		Delivered:  w.delivered.Load(),
		Dropped:    w.dropped.Load(),
		Gaps:       w.f.gaps.Load(),
		Poisoned:   w.f.poisoned.Load(),
		Restarts:   w.f.restarts.Load(),
		HandedBack: w.handedBack.Load(),
	}
	if w.q != nil {
		added, queued := w.q.Counts() // the prefix, pinned, is not added
		s.Delivered, s.Queued = added, queued
		if w.d != nil {
			s.Queued += w.held.len()
		}
	} else {
		s.Queued = len(w.ch)
	}
	if d := w.d; d != nil {
		s.Redelivered = d.redelivered.Load()
		s.Outstanding, s.Acked = d.acks.state()
	}
	return s
}
