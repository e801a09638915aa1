package natsbridge

import "github.com/heraldgo/herald/broadcast"

// Backlog returns where the watcher's queue stands now, as
// broadcast.Watcher.Backlog (the value Events' goroutine holds out to its
// reader, if any, is no longer queued).
func (w *Watcher[T]) Backlog() broadcast.Backlog { return w.w.Backlog() }
