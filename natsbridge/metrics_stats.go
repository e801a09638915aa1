package natsbridge

import "github.com/heraldgo/herald/broadcast"

// Backlog returns where the watcher's queue stands now, as
// broadcast.Watcher.Backlog: the values that entered it (its prefix, then
// what Stats().Delivered counts) and those still queued.
func (w *Watcher[T]) Backlog() broadcast.Backlog {
	s := w.Stats()
	return broadcast.Backlog{Watcher: 1, Entered: w.prefix + s.Delivered, Queued: s.Queued}
}
