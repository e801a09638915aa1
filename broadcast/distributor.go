package broadcast

import "slices"

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
//     room (w.writer, or the send itself when the watcher delivers through
//     a channel), a Stop arrives (b.work: Stop and Shutdown signal it
//     unconditionally for this reason, and the distributor serves every
//     Stop request before it waits again), or a Shutdown whose context
//     ended gives up (b.abort: from then on no Block watcher is waited for,
//     and what a full one cannot take is counted as dropped).
//
// It never waits for anything else, never runs user code, and holds no
// lock while it waits. Each round takes, in one critical section, every
// queued value, marker and Stop request, so the cost of locking and waking
// is shared by a batch, and each watcher is locked and woken once per
// batch rather than once per value.

// A marker is a function bound to a position in the value queue: the
// distributor runs it once every value queued before it has been placed
// in (or dropped from) the queue of every watcher, and before it
// distributes any value queued after it. Markers never reach watchers.
// Registration and Flush travel the queue this way.
type marker[T any] struct {
	pos   uint64      // the values queued before it
	watch *Watcher[T] // a registration marker: the watcher it adds
	run   func()      // any other marker (Flush): runs on the distributor goroutine; must not block
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

// run is the distributor goroutine.
func (b *Broadcaster[T]) run() {
	defer close(b.done)
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
		c := b.work.parkLocked()
		b.mu.Unlock()
		<-c
		b.mu.Lock()
		b.work.unparkLocked()
	}
	d.vals, b.queue = b.queue, d.vals[:0]
	d.marks, b.marks = b.marks, d.marks[:0]
	b.flush, d.deadMarks = nil, 0 // every marker is taken
	stops := b.stops
	b.stops = nil
	d.last = b.closed
	var space chan struct{}
	if len(d.vals) > 0 {
		space = b.space.wakeLocked()
	}
	b.mu.Unlock()
	signal(space)
	b.closeStopped(stops)
	return true
}

// distribute delivers the round's values to every watcher, running each
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

// activate adds w to the watchers values are delivered to; it is the
// function of w's registration marker.
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
		case <-b.work.c:
			b.serveStops()
		case <-b.abort:
			b.drop(w, len(vals), dropShutdown)
			return
		}
		if len(vals) == 0 {
			return
		}
	}
}

// place puts what it can of vals in w's queue, by w's policy, and returns
// how many it consumed. When w is a full Block watcher, it also returns
// what to wait on: the channel to send the next value on, or the signal of
// a reader making room in the ring.
func (b *Broadcaster[T]) place(w *Watcher[T], vals []T) (n int, send chan T, room <-chan struct{}) {
	w.mu.Lock()
	if w.writer.n > 0 {
		w.writer.unparkLocked() // back from a wait for room
	}
	if w.closed {
		w.mu.Unlock()
		return len(vals), nil, nil
	}
	if ch := w.ch; ch != nil {
		w.mu.Unlock()
		if n = b.sendAll(w, ch, vals); n < len(vals) {
			send = ch
		}
		return n, send, nil
	}
	n, added, dropped := w.placeLocked(vals)
	w.pushed += uint64(added)
	var reader chan struct{}
	if added > 0 {
		reader = w.readers.wakeLocked()
	}
	if n < len(vals) {
		room = w.writer.parkLocked()
	}
	w.mu.Unlock()
	if reader != nil {
		signal(reader)
	}
	b.d.delivered += uint64(added)
	if dropped > 0 {
		b.drop(w, dropped, policyDrop(w.full))
	}
	return n, nil, room
}

// placeLocked adds vals to w's ring by w's policy, and returns what
// ring.place returns. The published values an All loop handed back to
// front count against the queue length as the ring's do: a Block or
// DropNewest watcher has that much less room, and a DropOldest watcher
// discards them first, as the oldest.
func (w *Watcher[T]) placeLocked(vals []T) (consumed, added, dropped int) {
	if w.back == 0 { // the usual case: no All loop ended early
		return w.queue.place(w.full, vals)
	}
	if w.full == DropOldest {
		dropped = w.discardBackLocked(w.back + w.queue.len() + len(vals) - w.queue.limit)
		if w.back == 0 {
			_, added, d := w.queue.place(DropOldest, vals)
			return len(vals), added, dropped + d
		}
		// What is left in front leaves room for every value of vals.
	}
	k := min(len(vals), max(w.queue.free()-w.back, 0))
	w.queue.push(vals[:k])
	if w.full == Block {
		return k, k, 0
	}
	return len(vals), k, dropped + len(vals) - k
}

// discardBackLocked discards up to n of the published values in front,
// oldest first, and returns how many it discarded. The prefix values ahead
// of them stay: no policy drops those.
func (w *Watcher[T]) discardBackLocked(n int) int {
	n = min(n, w.back)
	if n <= 0 {
		return 0
	}
	p := len(w.front) - w.back // the prefix values come first, by index
	w.front = slices.Delete(w.front, p, p+n)
	if w.back -= n; len(w.front) == 0 {
		w.front = nil
	}
	return n
}

// policyDrop is the reason a watcher's policy drops values for.
func policyDrop(p FullPolicy) dropReason {
	if p == DropOldest {
		return dropOldest
	}
	return dropNewest
}

// sendAll sends vals on w's channel without waiting, by w's policy, and
// returns how many it consumed: fewer than len(vals) only when a Block
// watcher's channel is full. Only the distributor sends on the channel, so
// no lock is needed, and after it takes a value out there is room for one.
func (b *Broadcaster[T]) sendAll(w *Watcher[T], ch chan T, vals []T) int {
	before, newest, oldest := w.chSent, 0, 0
	n := len(vals)
	for i, v := range vals {
		if w.full == Block || !w.overLimit(ch) {
			select {
			case ch <- v:
				w.chSent++
				continue
			default:
			}
		}
		if w.full == Block {
			n = i
			break
		}
		if w.full == DropOldest && w.chSent-uint64(len(ch)) >= w.chPinned {
			// At least chPinned values have left the channel, so the one
			// in front is not a prefix value: discard it.
			select {
			case <-ch:
				oldest++
			default: // a reader made room meanwhile
			}
			ch <- v
			w.chSent++
			continue
		}
		newest++ // DropNewest, or a DropOldest channel with its prefix in front
	}
	b.count(w, int(w.chSent-before))
	b.drop(w, newest, dropNewest)
	b.drop(w, oldest, dropOldest)
	return n
}

// overLimit reports whether w's channel holds its queue length of
// published values. The channel has room for the values owed ahead of the
// queue at the switch as well (an unread prefix), so it can be full for
// the queue before it is full for Go. len(ch) may only fall meanwhile, so
// the answer errs towards full.
func (w *Watcher[T]) overLimit(ch chan T) bool {
	n := uint64(len(ch))
	if cap(ch) <= w.queue.limit {
		return n == uint64(cap(ch))
	}
	received := w.chSent - n
	pinned := w.chPinned - min(w.chPinned, received) // prefix values still in ch
	return n-pinned >= uint64(w.queue.limit)
}

// serveStops closes every watcher whose Stop is pending, for a distributor
// held up in a round (next takes them with the round).
func (b *Broadcaster[T]) serveStops() {
	b.mu.Lock()
	stops := b.stops
	b.stops = nil
	b.mu.Unlock()
	b.closeStopped(stops)
}

// closeStopped closes the watchers of stops. A watcher stopped before its
// registration marker was reached leaves the marker behind; while the
// distributor is held up in one round, those markers are removed once
// they are more than half of the queued ones, so that memory stays
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

// closeWatcher closes w: nothing more is delivered to it, its channel (if
// any) is closed, and its readers return once its queue is drained. Only
// the distributor calls it.
func (b *Broadcaster[T]) closeWatcher(w *Watcher[T]) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	switch {
	case w.pending != nil:
		w.switchLocked() // closes the new channel: the watcher is closed
	case w.ch != nil:
		close(w.ch)
	}
	signal(w.readers.wakeLocked()) // passed on from reader to reader (passOnLocked)
	b.watchers.Add(-1)             // before done: once Stop returns, Stats counts w no more
	close(w.done)                  // last: once Stop sees it, every read sees the close

	if w.active {
		b.d.closedAny = true
	} else {
		b.d.deadMarks++
	}
}
