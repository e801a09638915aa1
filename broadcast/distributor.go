package broadcast

import "github.com/heraldgo/herald/internal/wait"

// How the distributor waits
//
// One goroutine, the distributor (Broadcaster.run), moves values from the
// incoming queue to the watchers' queues. It parks in exactly two places:
//
//   - For work, in next: on b.work, until a publisher queues a value, Watch
//     or Flush queues a marker, Stop requests a close, or Shutdown begins.
//     Publishers signal it only while it is parked, so a busy distributor
//     costs them nothing.
//   - For room, in deliver: on a full Block watcher, until a reader makes
//     room (the signal its queue returns, or the send itself for a channel
//     watcher), a Stop arrives
//     (b.work: Stop and Shutdown signal it unconditionally for this reason,
//     and the distributor serves every Stop request before it waits
//     again), or a Shutdown whose context ended gives up (b.life's
//     Aborting: from then on no Block watcher is waited for, and what a
//     full one cannot take is counted as dropped).
//
// It never waits for anything else, never runs user code, and holds no
// lock while it waits. Each round takes, in one critical section, every
// queued value, marker and Stop request, so the cost of locking and waking
// is shared by a batch, and each watcher is locked and woken once per
// batch rather than once per value.

// A marker is an item bound to a position in the value queue, never seen
// by watchers: the distributor acts on it when it reaches that position,
// once every value queued before it has been placed in (or dropped from)
// the queue of every watcher, and before it distributes any value queued
// after it. A registration marker adds its watcher to those values are
// delivered to; any other marker (Flush) is a function the distributor
// runs there.
type marker[T any] struct {
	pos   uint64      // the values queued before it
	watch *Watcher[T] // a registration marker: the watcher it adds
	run   func()      // any other marker: runs on the distributor goroutine; must not block
}

// distributor is the state owned by the distributor goroutine.
type distributor[T any] struct {
	active      []*Watcher[T] // registered and open, in registration order
	distributed uint64        // position of the next value to take
	closedAny   bool          // a watcher in active was closed this round
	deadMarks   int           // at least the registration markers in b.marks whose watcher is closed (also counts those taken with this round)
	delivered   uint64        // values placed since the last publishCounts

	// The round being distributed, taken from the incoming queue; its
	// slices are swapped with the broadcaster's to be reused.
	vals  []T
	marks []marker[T]
	last  bool // Shutdown had begun: nothing can follow this round
}

// run is the distributor goroutine; b.life counts it.
func (b *Broadcaster[T]) run() {
	for b.next() {
		b.distribute()
	}
	b.mu.Lock()
	b.exited, b.stops = true, nil // the last round served every Stop
	b.mu.Unlock()
	for _, w := range b.d.active {
		b.closeWatcher(w)
	}
	b.d.active = nil
}

// next waits for work and takes the next round. It reports false once the
// last round has been distributed.
func (b *Broadcaster[T]) next() bool {
	d := &b.d
	if d.last {
		return false
	}
	b.mu.Lock()
	for !b.closed && len(b.queue) == 0 && len(b.marks) == 0 && len(b.stops) == 0 {
		c := b.work.ParkLocked()
		b.mu.Unlock()
		<-c
		b.mu.Lock()
		b.work.UnparkLocked()
	}
	d.vals, b.queue = b.queue, d.vals[:0]
	d.marks, b.marks = b.marks, d.marks[:0]
	b.flush, d.deadMarks = nil, 0 // every marker is taken
	stops := b.stops
	b.stops = nil
	d.last = b.closed
	var space chan struct{}
	if len(d.vals) > 0 {
		space = b.space.WakeLocked()
	}
	b.mu.Unlock()
	wait.Signal(space)
	b.closeStopped(stops)
	return true
}

// distribute delivers the round's values to every watcher, acting on each
// marker at its position.
func (b *Broadcaster[T]) distribute() {
	d := &b.d
	base, off := d.distributed, 0
	for _, m := range d.marks {
		cut := int(m.pos - base)
		b.fanout(d.vals[off:cut])
		off = cut
		if m.watch != nil {
			d.activate(m.watch)
			continue
		}
		b.publishCounts() // a Flush marker's caller may read Stats next
		m.run()
	}
	b.fanout(d.vals[off:])
	b.publishCounts()
	d.distributed += uint64(len(d.vals))
	clear(d.vals) // keep no reference to values or markers until the next round
	clear(d.marks)
	if d.closedAny {
		d.compact()
	}
}

// publishCounts adds the values placed since the last call to the total
// Stats reads.
func (b *Broadcaster[T]) publishCounts() {
	if n := b.d.delivered; n > 0 {
		b.delivered.Add(n)
		b.d.delivered = 0
	}
}

// fanout delivers vals to every active watcher.
func (b *Broadcaster[T]) fanout(vals []T) {
	if len(vals) == 0 {
		return
	}
	for _, w := range b.d.active {
		b.deliver(w, vals)
	}
}

// activate adds w to the watchers values are delivered to: what the
// distributor does at w's registration marker.
func (d *distributor[T]) activate(w *Watcher[T]) {
	w.active = true
	if !w.closed { // stopped before its marker was reached
		d.active = append(d.active, w)
	}
}

// compact removes closed watchers from active.
func (d *distributor[T]) compact() {
	live := d.active[:0]
	for _, w := range d.active {
		if !w.closed {
			live = append(live, w)
		}
	}
	clear(d.active[len(live):])
	d.active, d.closedAny = live, false
}

// deliver places vals in w's queue by w's policy, waiting while w is a full
// Block watcher (see "How the distributor waits").
func (b *Broadcaster[T]) deliver(w *Watcher[T], vals []T) {
	for {
		n, send, room := b.place(w, vals)
		if vals = vals[n:]; len(vals) == 0 {
			return
		}
		b.publishCounts() // Stats are current while the distributor waits
		select {
		case send <- vals[0]: // nil unless w delivers through a channel
			w.chSent++
			b.count(w, 1)
			vals = vals[1:]
		case <-room: // nil if w delivers through a channel
		case <-b.work.C():
			b.serveStops()
		case <-b.life.Aborting().Done():
			b.drop(w, len(vals), dropShutdown)
			return
		}
		if len(vals) == 0 {
			return
		}
	}
}

// serveStops closes every watcher whose Stop was requested and not yet
// served, for a distributor held up in a round (next takes them with the
// round).
func (b *Broadcaster[T]) serveStops() {
	b.mu.Lock()
	stops := b.stops
	b.stops = nil
	b.mu.Unlock()
	b.closeStopped(stops)
}

// closeStopped closes the watchers of stops. A watcher stopped before the
// distributor reached its registration marker leaves the marker behind;
// while the distributor is held up in one round, those markers are removed
// once they are more than half of the queued ones, so that memory stays
// bounded by twice the markers of open watchers and Flush calls.
func (b *Broadcaster[T]) closeStopped(stops []*Watcher[T]) {
	for _, w := range stops {
		b.closeWatcher(w)
	}
	if len(stops) == 0 {
		return
	}
	b.mu.Lock()
	if d := &b.d; d.deadMarks > 32 && 2*d.deadMarks > len(b.marks) {
		b.marks, d.deadMarks = retire(b.marks), 0
	}
	b.mu.Unlock()
}

// retire removes the registration markers of closed watchers from marks.
func retire[T any](marks []marker[T]) []marker[T] {
	keep := marks[:0]
	for _, m := range marks {
		if m.watch == nil || !m.watch.closed {
			keep = append(keep, m)
		}
	}
	clear(marks[len(keep):])
	return keep
}

// closeWatcher closes w: nothing more is delivered to it, its channel or
// queue is closed, and its readers return once it is drained. Only the
// distributor calls it.
func (b *Broadcaster[T]) closeWatcher(w *Watcher[T]) {
	// Before closeDone: once Stop returns, Stats counts w no more.
	b.open.remove(w)
	if w.closed {
		return
	}
	w.closed = true
	if w.ch != nil {
		close(w.ch)
	} else {
		w.q.Close()
	}
	close(w.closeDone) // last: once Stop sees it, every read sees the close

	if w.active {
		b.d.closedAny = true
	} else {
		b.d.deadMarks++
	}
}
