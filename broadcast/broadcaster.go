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
	full  FullPolicy // default watcher policy; never the zero value

	closing   chan struct{} // closed when Shutdown begins
	abort     chan struct{} // closed when a Shutdown context ends before the flush did
	abortOnce sync.Once
	done      chan struct{} // closed when the distributor has exited

	delivered atomic.Uint64
	dropped   [numDropReasons]atomic.Uint64
	watchers  atomic.Int64

	mu       sync.Mutex
	queue    []T           // published, not yet taken by the distributor; len <= incap
	enqueued uint64        // values accepted so far: the position of the next one
	marks    []marker[T]   // queued function markers, in position order
	stops    []*Watcher[T] // Stop requests the distributor has not served yet
	closed   bool          // Shutdown has begun
	refused  uint64        // TryPublish calls refused for a full incoming queue
	flush    *flushMark    // the last Flush marker queued, until the distributor takes it
	exited   bool          // the distributor has taken its last Stop requests
	work     waitq         // the distributor, parked for work (see distributor.go)
	space    waitq         // publishers, parked for room in queue

	d distributor[T] // owned by the distributor goroutine
}

// Stats is a snapshot of a Broadcaster's counters.
//
// Every value accepted by Publish or TryPublish is, for each watcher
// registered before it was queued and not stopped before it was
// distributed, either placed in that watcher's queue (Delivered) or counted
// in DroppedNewest or DroppedShutdown. Of the values placed, DroppedOldest
// and DroppedSwitch count those later lost from the queue; DroppedSwitch
// also counts the values of a prefix (see WatchWithPrefix) lost so, which
// no watcher's queue took from Publish and Delivered never counts. The sum
// of every watcher's Watcher.Dropped equals DroppedNewest + DroppedOldest +
// DroppedShutdown + DroppedSwitch.
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
	// values a full DropOldest watcher skipped because only its unread
	// prefix was older: see WatchWithPrefix).
	DroppedNewest uint64
	// DroppedOldest counts queued values a full DropOldest watcher discarded
	// to make room for newer ones.
	DroppedOldest uint64
	// DroppedShutdown counts values a full Block watcher never made room
	// for before the context given to Shutdown ended.
	DroppedShutdown uint64
	// DroppedSwitch counts values an All loop held, and could not put back,
	// because Events was called before the loop ended early: published
	// values, and values of a prefix, which Delivered does not count.
	DroppedSwitch uint64
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
	dropSwitch
	numDropReasons
)

// New returns a Broadcaster configured by opts (the zero Options gives the
// defaults). T must be smaller than 64 KiB, Go's limit on a channel's
// element: a larger T fails to compile, with "channel element type too
// large" errors inside this package; use a pointer to it. New panics if a
// length is negative or above MaxQueueLength, or opts.Full is not a
// FullPolicy constant: those are programming errors.
//
// New starts one goroutine, the distributor. It is the only goroutine that
// delivers values to watchers and the only one that closes their Events
// channels. It exits when Shutdown has flushed every queued value (or its
// context ended); every Broadcaster must be shut down.
func New[T any](opts Options) *Broadcaster[T] {
	b := &Broadcaster[T]{
		qlen:    checkLength(opts.QueueLength, DefaultQueueLength, "Options.QueueLength"),
		incap:   checkLength(opts.IncomingQueueLength, DefaultIncomingQueueLength, "Options.IncomingQueueLength"),
		full:    opts.Full.resolve(Block, "Options.Full"),
		closing: make(chan struct{}),
		abort:   make(chan struct{}),
		done:    make(chan struct{}),
		work:    newWaitq(),
		space:   newWaitq(),
	}
	go b.run() // the incoming queue grows as it fills, up to incap
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
// values of prefix, in order, before any published value. The prefix does
// not take room in the watcher's queue and no policy drops it: a snapshot
// listed before watching is never lost. (Only a DropOldest watcher read
// through Events whose channel fills while its prefix is still unread
// skips new values, counted in Stats.DroppedNewest, rather than drop the
// prefix.)
func (b *Broadcaster[T]) WatchWithPrefix(prefix []T) (*Watcher[T], error) {
	return b.watch(b.qlen, b.full, prefix)
}

// WatchWith is WatchWithPrefix with this watcher's own queue length and
// policy; the zero WatchOptions takes the broadcaster's. It panics if
// opts.QueueLength is negative or above MaxQueueLength, or opts.Full is
// not a FullPolicy constant.
func (b *Broadcaster[T]) WatchWith(opts WatchOptions, prefix ...T) (*Watcher[T], error) {
	qlen := checkLength(opts.QueueLength, b.qlen, "WatchOptions.QueueLength")
	full := opts.Full.resolve(b.full, "WatchOptions.Full")
	return b.watch(qlen, full, prefix)
}

// watch registers w through a marker: the distributor adds it to its
// watchers once every value queued before the call has been distributed
// and before any value queued after.
func (b *Broadcaster[T]) watch(qlen int, full FullPolicy, prefix []T) (*Watcher[T], error) {
	w := newWatcher(b, qlen, full, prefix)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	b.watchers.Add(1)
	signal(b.queueMarkerLocked(marker[T]{watch: w}))
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
	// The context is user code: it is consulted outside the lock.
	if err := ctx.Err(); err != nil {
		return err
	}
	done := ctx.Done()
	b.mu.Lock()
	for {
		if b.closed {
			b.mu.Unlock()
			return ErrClosed
		}
		if len(b.queue) < b.incap {
			work := b.enqueueLocked(v)
			space := b.passSpaceLocked()
			b.mu.Unlock()
			signal(work)
			signal(space)
			return nil
		}
		// Wait outside the lock, so that Shutdown is never held up by a
		// blocked publisher.
		c := b.space.parkLocked()
		b.mu.Unlock()
		ended := false
		select {
		case <-c:
		case <-b.closing:
		case <-done:
			ended = true
		}
		b.mu.Lock()
		b.space.unparkLocked()
		if ended {
			space := b.passSpaceLocked()
			b.mu.Unlock()
			signal(space)
			return ctx.Err()
		}
	}
}

// TryPublish queues v for every watcher if the incoming queue has room. It
// reports whether v was queued; it never blocks. A refusal is counted in
// Stats.DroppedIncoming. After Shutdown has begun it returns false,
// ErrClosed. TryPublish allocates nothing.
func (b *Broadcaster[T]) TryPublish(v T) (sent bool, err error) {
	b.mu.Lock()
	switch {
	case b.closed:
		b.mu.Unlock()
		return false, ErrClosed
	case len(b.queue) >= b.incap:
		b.refused++
		b.mu.Unlock()
		return false, nil
	}
	work := b.enqueueLocked(v)
	b.mu.Unlock()
	signal(work)
	return true, nil
}

// enqueueLocked appends v to the incoming queue. It returns the channel to
// signal, once unlocked, to wake the distributor (see waitq.wakeLocked).
func (b *Broadcaster[T]) enqueueLocked(v T) chan struct{} {
	b.queue = append(b.queue, v)
	b.enqueued++
	return b.work.wakeLocked()
}

// passSpaceLocked applies the hand-off rule to publishers: room left in the
// incoming queue goes on to the next parked publisher. It returns the
// channel to signal once unlocked.
func (b *Broadcaster[T]) passSpaceLocked() chan struct{} {
	if len(b.queue) < b.incap {
		return b.space.wakeLocked()
	}
	return nil
}

// queueMarkerLocked queues m at the current end of the incoming queue. It
// returns the channel to signal to wake the distributor.
func (b *Broadcaster[T]) queueMarkerLocked(m marker[T]) chan struct{} {
	m.pos = b.enqueued
	b.marks = append(b.marks, m)
	return b.work.wakeLocked()
}

// Flush returns once every value queued before the call has been placed in,
// or by its policy dropped from, the queue of every watcher registered
// before the call. It does not wait for watchers to read their values: see
// Watcher.Delivered for that. Flush travels the queue as a marker: it holds
// up no publisher and no watcher, and values queued after it do not delay
// it, but a full Block watcher ahead of it does: called from the only
// reader of that watcher, Flush waits for room that reader cannot make,
// until ctx ends. Flush calls made with no value queued between them
// share one marker.
//
// Flush returns ctx.Err() if ctx ends first, and ErrClosed if Shutdown has
// completed, or gave up on a full Block watcher (its context ended) before
// every value queued before the call was placed. While Shutdown is
// flushing, Flush waits for it. Flush panics on a nil ctx.
func (b *Broadcaster[T]) Flush(ctx context.Context) error {
	if ctx == nil {
		panic("broadcast: nil Context")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var work chan struct{}
	b.mu.Lock()
	f, closed := b.flush, b.closed
	if !closed && (f == nil || f.pos != b.enqueued) {
		f = &flushMark{pos: b.enqueued, reached: make(chan struct{})}
		b.flush = f
		work = b.queueMarkerLocked(marker[T]{run: func() { f.reach(b.abandonedAny()) }})
	}
	b.mu.Unlock()
	signal(work)
	if closed {
		select {
		case <-b.done:
			return ErrClosed // Shutdown has completed
		default:
		}
		// Shutdown delivers everything queued before it: wait for it.
		return b.waitFlushed(ctx, b.done, b.abandonedAny)
	}
	return b.waitFlushed(ctx, f.reached, func() bool { return f.abandoned })
}

// waitFlushed waits for reached, then returns ErrClosed if abandoned
// reports that a value before the flush was given up on; or ctx.Err() if
// ctx ends first.
func (b *Broadcaster[T]) waitFlushed(ctx context.Context, reached <-chan struct{}, abandoned func() bool) error {
	select {
	case <-reached:
		if abandoned() {
			return ErrClosed
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A flushMark is what a Flush marker reports to the Flush calls waiting on
// it.
type flushMark struct {
	pos       uint64
	reached   chan struct{} // closed when the marker has run
	abandoned bool          // a Shutdown had given up on a value before it; set before reached closes
}

func (f *flushMark) reach(abandoned bool) {
	f.abandoned = abandoned
	close(f.reached)
}

// abandonedAny reports whether a Shutdown gave up on a value. Called by a
// marker, on the distributor, it speaks of the values before the marker.
func (b *Broadcaster[T]) abandonedAny() bool {
	return b.dropped[dropShutdown].Load() > 0
}

// Shutdown stops the broadcaster. Watch, Publish and TryPublish return
// ErrClosed from the moment it begins; every value queued before is still
// delivered; then every watcher is closed (its queued values stay readable)
// and the distributor goroutine exits.
//
// Shutdown returns nil once that is done. If ctx ends first, because a Block
// watcher does not make room, Shutdown stops waiting for any Block watcher:
// what a full Block watcher cannot take is counted in Stats.DroppedShutdown
// and in that watcher's Dropped, while every other watcher still gets every
// value queued. Shutdown then returns ctx.Err() once the distributor has
// exited; and once values were abandoned so, every other Shutdown call,
// concurrent or later, returns ErrClosed when the distributor has exited,
// as Flush does. Only nil says that nothing queued was abandoned.
// Shutdown is idempotent and safe to call from any goroutine; but
// called from the only reader of a full Block watcher, it waits for room
// that reader cannot make until ctx ends (stop that watcher first). It
// panics on a nil ctx.
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
	signal(b.work.c) // also reaches a distributor waiting for room
	select {
	case <-b.done:
		return b.exitErr()
	case <-ctx.Done():
	}
	select {
	case <-b.done: // the flush finished as ctx ended
		return b.exitErr()
	default:
	}
	b.abortOnce.Do(func() { close(b.abort) })
	<-b.done
	return ctx.Err()
}

// exitErr is what Shutdown returns once the distributor has exited, unless
// its own context ended first: ErrClosed if a Shutdown gave up on values
// (its context ended), nil if every value queued was delivered.
func (b *Broadcaster[T]) exitErr() error {
	if b.abandonedAny() {
		return ErrClosed
	}
	return nil
}

// Done returns a channel that is closed when Shutdown begins: from then on
// Watch, Publish and TryPublish return ErrClosed. It lets a goroutine that
// feeds or serves the broadcaster notice the end without publishing.
func (b *Broadcaster[T]) Done() <-chan struct{} { return b.closing }

// Stats returns a snapshot of the broadcaster's counters. It is safe to call
// at any time, also after Shutdown.
//
// The counters are read while values move, but in the order values go
// through them: losses from a queue, then placements, then the other
// losses, then acceptance. So every snapshot keeps the sums of Stats:
// DroppedOldest + DroppedSwitch never exceeds Delivered plus the prefix
// values DroppedSwitch counts (with no prefix lost so, Delivered), and
// Delivered, DroppedNewest and DroppedShutdown count no value that
// Published does not count yet.
func (b *Broadcaster[T]) Stats() Stats {
	var s Stats
	s.DroppedOldest = b.dropped[dropOldest].Load()
	s.DroppedSwitch = b.dropped[dropSwitch].Load()
	s.Delivered = b.delivered.Load()
	s.DroppedNewest = b.dropped[dropNewest].Load()
	s.DroppedShutdown = b.dropped[dropShutdown].Load()
	s.Watchers = int(b.watchers.Load())
	b.mu.Lock()
	s.Published, s.DroppedIncoming = b.enqueued, b.refused
	b.mu.Unlock()
	return s
}

// requestStop asks the distributor to close w. Like Shutdown, it signals
// the distributor even when it is not parked for work, because a
// distributor waiting for room in a Block watcher serves Stop requests too.
func (b *Broadcaster[T]) requestStop(w *Watcher[T]) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.exited { // else the distributor closed w on its way out
		b.stops = append(b.stops, w)
		signal(b.work.c)
	}
}

// count records n values sent on w's channel; values placed in a ring are
// counted by place, under the watcher's lock. The broadcaster's total is
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
