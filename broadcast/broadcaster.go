package broadcast

import (
	"context"
	"sync"
	"sync/atomic"
)

// Broadcaster delivers every published value to every watcher, in the order
// the values were queued. It is safe for concurrent use; its zero value is
// not usable: create one with New and end it with Shutdown.
//
// Values are not copied: every watcher receives the same T. When T is a
// pointer, watchers must treat the value as read-only.
type Broadcaster[T any] struct {
	qlen  int        // default watcher queue length
	incap int        // incoming queue capacity
	full  FullPolicy // default watcher policy

	mu         sync.Mutex      // guards the fields down to idle
	queue      []T             // published, not yet taken by the distributor; len <= incap
	enqueued   uint64          // values accepted so far: the sequence number of the next one
	pending    []*Watcher[T]   // registered, not yet taken by the distributor
	stops      []*Watcher[T]   // Stop requests the distributor has not handled yet
	flushes    []chan struct{} // Flush calls waiting for the values queued before them
	closed     bool            // Shutdown has begun
	idle       bool            // the distributor is parked on wake
	pubWaiters int             // publishers parked on pubSpace
	inDropped  uint64          // TryPublish calls refused for a full incoming queue

	wake     chan struct{} // cap 1: work for the distributor
	pubSpace chan struct{} // cap 1: room in the incoming queue
	closing  chan struct{} // closed when Shutdown begins
	abort    chan struct{} // closed when a Shutdown context ends before the flush did
	abortMu  sync.Once
	done     chan struct{} // closed when the distributor has exited

	// Owned by the distributor goroutine alone.
	active      []*Watcher[T]
	distributed uint64 // values taken from the queue so far

	delivered   atomic.Uint64
	dropNewest  atomic.Uint64
	dropOldest  atomic.Uint64
	dropAborted atomic.Uint64
	watchers    atomic.Int64
}

// Stats is a snapshot of a Broadcaster's counters. Every value accepted by
// Publish or TryPublish is, for each watcher registered when it was queued,
// either delivered to that watcher's queue or counted in one of the Dropped
// fields (or skipped because the watcher was stopped first).
type Stats struct {
	// Published counts values accepted by Publish and TryPublish.
	Published uint64
	// Delivered counts values placed in a watcher's queue (one per value
	// per watcher).
	Delivered uint64
	// DroppedIncoming counts TryPublish calls refused because the incoming
	// queue was full.
	DroppedIncoming uint64
	// DroppedNewest counts values a full DropNewest watcher missed.
	DroppedNewest uint64
	// DroppedOldest counts queued values a full DropOldest watcher discarded
	// to make room for newer ones.
	DroppedOldest uint64
	// DroppedShutdown counts deliveries abandoned because the context given
	// to Shutdown ended before every queued value was delivered.
	DroppedShutdown uint64
	// Watchers is the number of watchers registered and not yet closed.
	Watchers int
}

// New returns a Broadcaster configured by opts (the zero Options gives the
// defaults). It panics if a length is negative or opts.Full is not a
// FullPolicy constant: those are programming errors.
//
// New starts one goroutine, the distributor. It is the only goroutine that
// delivers values to watchers and the only one that closes their Events
// channels. It exits when Shutdown has flushed every queued value (or its
// context ended); every Broadcaster must be shut down.
func New[T any](opts Options) *Broadcaster[T] {
	if opts.QueueLength < 0 {
		panic("broadcast: negative Options.QueueLength")
	}
	if opts.IncomingQueueLength < 0 {
		panic("broadcast: negative Options.IncomingQueueLength")
	}
	if !opts.Full.valid() {
		panic("broadcast: invalid Options.Full " + opts.Full.String())
	}
	b := &Broadcaster[T]{
		qlen:     opts.QueueLength,
		incap:    opts.IncomingQueueLength,
		full:     opts.Full,
		wake:     make(chan struct{}, 1),
		pubSpace: make(chan struct{}, 1),
		closing:  make(chan struct{}),
		abort:    make(chan struct{}),
		done:     make(chan struct{}),
	}
	if b.qlen == 0 {
		b.qlen = DefaultQueueLength
	}
	if b.incap == 0 {
		b.incap = DefaultIncomingQueueLength
	}
	b.queue = make([]T, 0, b.incap)
	go b.run(make([]T, 0, b.incap))
	return b
}

// Watch registers a watcher with the broadcaster's queue length and policy.
// The watcher receives exactly the values queued after Watch was called,
// none queued before. Watch never blocks. After Shutdown has begun it
// returns ErrClosed.
func (b *Broadcaster[T]) Watch() (*Watcher[T], error) {
	return b.watch(b.qlen, b.full, nil)
}

// WatchWithPrefix is Watch, except that the watcher first receives the
// values of prefix, in order, before any published value. Its queue holds
// at least len(prefix)+1 values, so the prefix never blocks and is never
// dropped.
func (b *Broadcaster[T]) WatchWithPrefix(prefix []T) (*Watcher[T], error) {
	return b.watch(b.qlen, b.full, prefix)
}

// WatchWith is WatchWithPrefix with this watcher's own queue length and
// policy. It panics if opts.QueueLength is negative or opts.Full is not a
// FullPolicy constant.
func (b *Broadcaster[T]) WatchWith(opts WatchOptions, prefix ...T) (*Watcher[T], error) {
	if opts.QueueLength < 0 {
		panic("broadcast: negative WatchOptions.QueueLength")
	}
	if !opts.Full.valid() {
		panic("broadcast: invalid WatchOptions.Full " + opts.Full.String())
	}
	qlen := opts.QueueLength
	if qlen == 0 {
		qlen = b.qlen
	}
	return b.watch(qlen, opts.Full, prefix)
}

func (b *Broadcaster[T]) watch(qlen int, full FullPolicy, prefix []T) (*Watcher[T], error) {
	w := newWatcher(b, qlen, full, prefix)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, ErrClosed
	}
	// Registration is by position in the queue: the watcher gets the values
	// whose sequence number is at least start. That is the FIFO guarantee of
	// apimachinery's function marker, without a marker in the value stream.
	w.start = b.enqueued
	b.pending = append(b.pending, w)
	b.watchers.Add(1)
	wake := b.wakeLocked()
	b.mu.Unlock()
	if wake {
		signal(b.wake)
	}
	return w, nil
}

// Publish queues v for every watcher, waiting while the incoming queue is
// full. It returns nil once v is queued, ctx.Err() if ctx ends first (or had
// already ended), and ErrClosed if Shutdown has begun. It panics on a nil
// ctx. Publish allocates nothing.
func (b *Broadcaster[T]) Publish(ctx context.Context, v T) error {
	if ctx == nil {
		panic("broadcast: nil Context")
	}
	b.mu.Lock()
	for {
		if b.closed {
			b.mu.Unlock()
			return ErrClosed
		}
		if err := ctx.Err(); err != nil {
			b.signalPublisherLocked()
			b.mu.Unlock()
			return err
		}
		if len(b.queue) < b.incap {
			wake := b.enqueueLocked(v)
			b.signalPublisherLocked()
			b.mu.Unlock()
			if wake {
				signal(b.wake)
			}
			return nil
		}
		// Wait outside the lock, so that Shutdown is never held up by a
		// blocked publisher.
		b.pubWaiters++
		b.mu.Unlock()
		select {
		case <-b.pubSpace:
		case <-b.closing:
		case <-ctx.Done():
		}
		b.mu.Lock()
		b.pubWaiters--
	}
}

// TryPublish queues v for every watcher if the incoming queue has room. It
// reports whether v was queued; it never blocks. A refusal is counted in
// Stats.DroppedIncoming. After Shutdown has begun it returns false,
// ErrClosed. TryPublish allocates nothing.
func (b *Broadcaster[T]) TryPublish(v T) (sent bool, err error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return false, ErrClosed
	}
	if len(b.queue) >= b.incap {
		b.inDropped++
		b.mu.Unlock()
		return false, nil
	}
	wake := b.enqueueLocked(v)
	b.mu.Unlock()
	if wake {
		signal(b.wake)
	}
	return true, nil
}

// enqueueLocked appends v and reports whether the distributor must be woken.
func (b *Broadcaster[T]) enqueueLocked(v T) bool {
	b.queue = append(b.queue, v)
	b.enqueued++
	return b.wakeLocked()
}

// wakeLocked reports whether the distributor is parked and must be woken,
// and marks it awake so that only one caller sends the signal.
func (b *Broadcaster[T]) wakeLocked() bool {
	if b.idle {
		b.idle = false
		return true
	}
	return false
}

// signalPublisherLocked passes room in the incoming queue on to the next
// parked publisher, so that a publisher leaving never strands another.
func (b *Broadcaster[T]) signalPublisherLocked() {
	if b.pubWaiters > 0 && len(b.queue) < b.incap {
		signal(b.pubSpace)
	}
}

// Flush returns once every value queued before the call has been placed in,
// or by its policy dropped from, the queue of every watcher registered
// before the call. It does not wait for watchers to read their values. It
// returns ctx.Err() if ctx ends first, and ErrClosed if Shutdown has
// completed. Flush never delays publishers or other watchers. It panics on
// a nil ctx.
func (b *Broadcaster[T]) Flush(ctx context.Context) error {
	if ctx == nil {
		panic("broadcast: nil Context")
	}
	select {
	case <-b.done:
		return ErrClosed
	default:
	}
	f := make(chan struct{})
	b.mu.Lock()
	b.flushes = append(b.flushes, f)
	wake := b.wakeLocked()
	b.mu.Unlock()
	if wake {
		signal(b.wake)
	}
	select {
	case <-f:
		return nil
	case <-b.done: // everything queued was delivered or counted as abandoned
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown stops the broadcaster. Watch, Publish and TryPublish return
// ErrClosed from the moment it begins; every value queued before is still
// delivered; then every watcher is closed (its queued values stay readable)
// and the distributor goroutine exits.
//
// Shutdown returns nil once that is done. If ctx ends first, because a Block
// watcher never made room, Shutdown abandons what it could not deliver,
// counts it in Stats.DroppedShutdown and in each watcher's Dropped, closes
// the watchers, and returns ctx.Err() once the distributor has exited.
// Shutdown is idempotent and safe to call from any goroutine. It panics on a
// nil ctx.
func (b *Broadcaster[T]) Shutdown(ctx context.Context) error {
	if ctx == nil {
		panic("broadcast: nil Context")
	}
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.closing)
	}
	b.mu.Unlock()
	signal(b.wake)
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
	}
	select {
	case <-b.done: // the flush finished as ctx ended
		return nil
	default:
	}
	b.abortMu.Do(func() { close(b.abort) })
	<-b.done
	return ctx.Err()
}

// Stats returns a snapshot of the broadcaster's counters. It is safe to call
// at any time, also after Shutdown.
func (b *Broadcaster[T]) Stats() Stats {
	b.mu.Lock()
	published, inDropped := b.enqueued, b.inDropped
	b.mu.Unlock()
	return Stats{
		Published:       published,
		Delivered:       b.delivered.Load(),
		DroppedIncoming: inDropped,
		DroppedNewest:   b.dropNewest.Load(),
		DroppedOldest:   b.dropOldest.Load(),
		DroppedShutdown: b.dropAborted.Load(),
		Watchers:        int(b.watchers.Load()),
	}
}

// run is the distributor. Each round takes, in one critical section, every
// queued value, every new registration and every Stop request, so that the
// cost of locking and waking is shared by a whole batch of values.
func (b *Broadcaster[T]) run(spare []T) {
	defer close(b.done)
	var regSpare []*Watcher[T]
	aborted := false
	for !aborted {
		b.mu.Lock()
		for !b.closed && len(b.queue) == 0 && len(b.pending) == 0 && len(b.stops) == 0 && len(b.flushes) == 0 {
			b.idle = true
			b.mu.Unlock()
			<-b.wake
			b.mu.Lock()
		}
		b.idle = false
		batch := b.queue
		b.queue = spare
		regs := b.pending
		b.pending = regSpare
		flushes := b.flushes
		b.flushes = nil
		last := b.closed // nothing can be queued after this round
		if len(batch) > 0 {
			b.signalPublisherLocked()
		}
		b.mu.Unlock()

		base := b.distributed
		b.distributed += uint64(len(batch))
		if len(batch) > 0 {
			for _, w := range b.active {
				if aborted {
					b.abandon(w, len(batch))
				} else if !w.gone {
					aborted = !b.deliver(w, batch)
				}
			}
		}
		for _, w := range regs {
			if w.gone {
				continue // stopped before it was ever distributed to
			}
			b.active = append(b.active, w)
			off := int(w.start - base)
			if off >= len(batch) {
				continue
			}
			if aborted {
				b.abandon(w, len(batch)-off)
			} else {
				aborted = !b.deliver(w, batch[off:])
			}
		}
		b.handleStops()
		// Every value queued before these Flush calls was in this batch or
		// an earlier one, and is now placed or dropped.
		for _, f := range flushes {
			close(f)
		}

		clear(batch)
		spare = batch[:0]
		clear(regs)
		regSpare = regs[:0]
		b.compact()
		if last {
			break
		}
	}
	if aborted {
		// Values still queued were accepted before Shutdown began; they are
		// owed to every live watcher registered before them, and are counted
		// as abandoned.
		b.mu.Lock()
		rest, regs := b.queue, b.pending
		b.queue, b.pending = nil, nil
		b.mu.Unlock()
		for _, w := range b.active {
			b.abandon(w, len(rest))
		}
		for _, w := range regs {
			b.active = append(b.active, w)
			b.abandon(w, len(rest)-int(w.start-b.distributed))
		}
	}
	for _, w := range b.active {
		b.closeWatcher(w)
	}
	b.active = nil
	b.mu.Lock()
	flushes := b.flushes
	b.flushes = nil
	b.mu.Unlock()
	for _, f := range flushes {
		close(f) // what they waited for was delivered or counted as abandoned
	}
}

// compact removes closed watchers from the active list.
func (b *Broadcaster[T]) compact() {
	live := b.active[:0]
	for _, w := range b.active {
		if !w.gone {
			live = append(live, w)
		}
	}
	clear(b.active[len(live):])
	b.active = live
}

// handleStops closes every watcher whose Stop is pending.
func (b *Broadcaster[T]) handleStops() {
	b.mu.Lock()
	stops := b.stops
	b.stops = nil
	b.mu.Unlock()
	for _, w := range stops {
		b.closeWatcher(w)
	}
}

// closeWatcher marks w closed: no value is delivered to it any more, its
// Events channel (if any) is closed, and readers waiting on it return once
// its queue is drained. Only the distributor calls it.
func (b *Broadcaster[T]) closeWatcher(w *Watcher[T]) {
	if w.gone {
		return
	}
	w.gone = true
	w.mu.Lock()
	w.closed = true
	if w.ch != nil {
		close(w.ch)
	}
	if w.readers > 0 {
		signal(w.dataReady)
	}
	w.mu.Unlock()
	close(w.done)
	b.watchers.Add(-1)
}

// abandon counts n values owed to w that Shutdown gave up on.
func (b *Broadcaster[T]) abandon(w *Watcher[T], n int) {
	if n <= 0 || w.gone {
		return
	}
	w.dropped.Add(uint64(n))
	b.dropAborted.Add(uint64(n))
}

// deliver places vals in w's queue according to w's policy. It reports false
// only if a Shutdown context ended while it waited for a Block watcher; what
// it could not deliver is then counted as abandoned.
func (b *Broadcaster[T]) deliver(w *Watcher[T], vals []T) bool {
	for len(vals) > 0 {
		w.mu.Lock()
		if w.ch != nil {
			ch := w.ch
			w.mu.Unlock()
			return b.deliverChan(w, ch, vals)
		}
		n, placed, dropped := w.pushLocked(vals)
		vals = vals[n:]
		wakeReader := w.readers > 0
		if len(vals) > 0 {
			w.writerWaiting = true
		}
		w.mu.Unlock()
		b.count(w, placed, dropped)
		if wakeReader {
			signal(w.dataReady)
		}
		if len(vals) == 0 {
			return true
		}
		// A Block watcher is full: wait for room, for a Stop (of this
		// watcher or any other: Stop signals wake, and no Stop waits for
		// this watcher), or for an abandoning Shutdown.
		select {
		case <-w.space:
		case <-b.wake:
			b.handleStops()
			if w.gone {
				return true
			}
		case <-b.abort:
			b.abandon(w, len(vals))
			return false
		}
	}
	return true
}

// deliverChan is deliver for a watcher read through Events. Only the
// distributor sends on or closes ch, so sending without w.mu is safe.
func (b *Broadcaster[T]) deliverChan(w *Watcher[T], ch chan T, vals []T) bool {
	switch w.full {
	case DropNewest:
		sent := 0
		for _, v := range vals {
			select {
			case ch <- v:
				sent++
			default:
			}
		}
		b.count(w, sent, len(vals)-sent)
	case DropOldest:
		dropped := 0
		for _, v := range vals {
			select {
			case ch <- v:
				continue
			default:
			}
			select {
			case <-ch:
				dropped++
			default: // a reader made room meanwhile
			}
			// The distributor is the only sender, so there is room now.
			ch <- v
		}
		b.count(w, len(vals), dropped)
	default: // Block
		for i := 0; i < len(vals); {
			select {
			case ch <- vals[i]:
				i++
				continue
			default:
			}
			select {
			case ch <- vals[i]:
				i++
			case <-b.wake:
				b.handleStops()
				if w.gone {
					b.count(w, i, 0)
					return true
				}
			case <-b.abort:
				b.count(w, i, 0)
				b.abandon(w, len(vals)-i)
				return false
			}
		}
		b.count(w, len(vals), 0)
	}
	return true
}

// count records values placed in w's queue and values dropped by w's
// policy. A DropOldest watcher counts every value as placed and each value
// it discards to make room as dropped, so that for each watcher
// placed = read + still queued + DroppedOldest.
func (b *Broadcaster[T]) count(w *Watcher[T], delivered, dropped int) {
	if delivered > 0 {
		b.delivered.Add(uint64(delivered))
		w.delivered.Add(uint64(delivered))
	}
	if dropped <= 0 {
		return
	}
	w.dropped.Add(uint64(dropped))
	if w.full == DropOldest {
		b.dropOldest.Add(uint64(dropped))
	} else {
		b.dropNewest.Add(uint64(dropped))
	}
}

// signal makes a non-blocking send on a capacity-1 wake-up channel: a
// pending signal is as good as two.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
