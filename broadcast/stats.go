package broadcast

// Stats is a snapshot of a Broadcaster's counters.
//
// Every value accepted by Publish or TryPublish is, for each watcher
// registered before it was queued and not stopped before it was
// distributed, either placed in that watcher's queue (Delivered) or counted
// in DroppedNewest or DroppedShutdown. Of the values placed, DroppedOldest
// counts those later lost from the queue. The sum of every watcher's
// Watcher.Dropped equals DroppedNewest + DroppedOldest + DroppedShutdown.
type Stats struct {
	// Published counts values accepted by Publish and TryPublish.
	Published uint64
	// Delivered counts values placed in a watcher's queue (one per value
	// per watcher).
	Delivered uint64
	// DroppedIncoming counts TryPublish calls refused because the incoming
	// queue was full.
	DroppedIncoming uint64
	// DroppedNewest counts values a full DropNewest watcher skipped (and
	// values a full DropOldest channel watcher skipped because only its
	// unread prefix was older: see WatchWith).
	DroppedNewest uint64
	// DroppedOldest counts queued values a full DropOldest watcher discarded
	// to make room for newer ones.
	DroppedOldest uint64
	// DroppedShutdown counts values a Block watcher's queue had no room
	// for once the context given to Shutdown had ended.
	DroppedShutdown uint64
	// Watchers is the number of watchers registered and not yet closed;
	// a watcher whose Stop has returned is no longer counted.
	Watchers int
}

// dropReason says which Stats field counts a lost value.
type dropReason int

const (
	dropNewest dropReason = iota
	dropOldest
	dropShutdown
	numDropReasons
)

// Stats returns a snapshot of the broadcaster's counters. It is safe to call
// at any time, also after Shutdown.
//
// The counters are read while values move, but in the order values go
// through them: losses from a queue, then placements, then the other
// losses, then acceptance. So every snapshot keeps the sums of Stats:
// DroppedOldest never exceeds Delivered, and Delivered, DroppedNewest and
// DroppedShutdown count no value that Published does not count yet.
func (b *Broadcaster[T]) Stats() Stats {
	var s Stats
	s.DroppedOldest = b.dropped[dropOldest].Load()
	s.Delivered = b.delivered.Load()
	s.DroppedNewest = b.dropped[dropNewest].Load()
	s.DroppedShutdown = b.dropped[dropShutdown].Load()
	s.Watchers = b.open.len()
	b.mu.Lock()
	s.Published, s.DroppedIncoming = b.enqueued, b.refused
	b.mu.Unlock()
	return s
}

// count records n values sent on w's channel; a queue watcher's queue
// counts the values placed in it. The broadcaster's total is
// summed by the distributor and published once per round and before each
// marker (see publishCounts): one atomic add per round rather than one per
// watcher.
func (b *Broadcaster[T]) count(w *Watcher[T], n int) {
	if n > 0 {
		w.chDelivered.Add(uint64(n))
		b.d.delivered += uint64(n)
	}
}

// drop records n values owed to w and lost, for reason: the one place that
// counts a loss, so that a watcher's Dropped and Stats always agree.
func (b *Broadcaster[T]) drop(w *Watcher[T], n int, reason dropReason) {
	if n > 0 {
		if reason == dropOldest {
			// The values discarded were placed first, maybe in this
			// round: Delivered counts them before DroppedOldest does
			// (only the distributor discards, so b.d is its own).
			b.publishCounts()
		}
		w.dropped.Add(uint64(n))
		b.dropped[reason].Add(uint64(n))
	}
}
