package broadcast

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/heraldgo/herald/internal/lifecycle"
	"github.com/heraldgo/herald/internal/wait"
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

	// life runs the distributor. Its Stopping is done when Shutdown begins,
	// its Aborting when a Shutdown's context ended before the distributor
	// exited, and its Exited once the distributor has exited.
	life *lifecycle.Group

	delivered atomic.Uint64
	dropped   [numDropReasons]atomic.Uint64

	// mu guards queue, enqueued, marks, stops, closed, refused, flush,
	// exited, and the parked counts of work and space.
	mu       sync.Mutex
	queue    []T           // published, not yet taken by the distributor; len <= incap
	enqueued uint64        // values accepted so far: the position of the next one
	marks    []marker[T]   // markers queued, in position order
	stops    []*Watcher[T] // Stop requests the distributor has not served yet
	closed   bool          // Shutdown has begun
	refused  uint64        // TryPublish calls refused for a full incoming queue
	flush    *flushMark    // the last Flush marker queued, until the distributor takes it
	exited   bool          // the distributor has taken its last Stop requests
	work     wait.Queue    // the distributor, parked for work (see distributor.go)
	space    wait.Queue    // publishers, parked for room in queue

	d distributor[T] // owned by the distributor goroutine

	open openSet[T] // the open watchers, for Backlogs
}

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
		qlen:  checkLength(opts.QueueLength, DefaultQueueLength, "Options.QueueLength"),
		incap: checkLength(opts.IncomingQueueLength, DefaultIncomingQueueLength, "Options.IncomingQueueLength"),
		full:  opts.Full.resolve(Block, "Options.Full"),
		life:  lifecycle.New(),
		work:  wait.NewQueue(),
		space: wait.NewQueue(),
	}
	b.life.Go(b.run) // the incoming queue grows as it fills, up to incap
	return b
}

// Watch registers a queue watcher (ReadQueue: read it with All or Next)
// with the broadcaster's queue length and policy. The watcher receives
// exactly the values queued after Watch was called, none queued before.
// Watch never blocks. After Shutdown has begun it returns an error
// wrapping ErrClosed. For a channel watcher, a prefix, or a length or
// policy of its own, use WatchWith.
func (b *Broadcaster[T]) Watch() (*Watcher[T], error) {
	return b.watch(b.qlen, b.full, ReadQueue, nil, errWatchClosed)
}

// WatchWith is Watch with this watcher's own options (the zero
// WatchOptions gives what Watch gives) and a prefix: the watcher first
// receives the values of prefix, in order, before any published value.
// The prefix does not take room in the watcher's queue and no policy
// drops it: a snapshot listed before watching is never lost. (Only a
// DropOldest channel watcher whose channel fills while its prefix is still
// unread skips new values, counted in Stats.DroppedNewest, rather than
// drop the prefix.) WatchWith panics if opts.QueueLength is negative or
// above MaxQueueLength, or opts.Full or opts.Read is not one of its
// type's constants.
func (b *Broadcaster[T]) WatchWith(opts WatchOptions, prefix ...T) (*Watcher[T], error) {
	qlen := checkLength(opts.QueueLength, b.qlen, "WatchOptions.QueueLength")
	full := opts.Full.resolve(b.full, "WatchOptions.Full")
	if opts.Read != ReadQueue && opts.Read != ReadChannel {
		panic("broadcast: invalid WatchOptions.Read " + opts.Read.String())
	}
	return b.watch(qlen, full, opts.Read, prefix, errWatchWithClosed)
}

// watch queues a registration marker for w at the current end of the
// incoming queue: when the distributor reaches that position, every value
// queued before the call has been distributed and none queued after, and it
// adds w to its watchers there.
func (b *Broadcaster[T]) watch(qlen int, full FullPolicy, read ReadMode, prefix []T, closed error) (*Watcher[T], error) {
	w := newWatcher(b, qlen, full, read, prefix)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, closed
	}
	b.open.add(w)
	wait.Signal(b.queueMarkerLocked(marker[T]{watch: w}))
	return w, nil
}

// Publish queues v for every watcher, waiting while the incoming queue is
// full. It returns nil once v is queued, ctx.Err() if ctx ends first (or had
// already ended), and an error wrapping ErrClosed if Shutdown has begun. It
// panics on a nil ctx. Publish allocates nothing.
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
			return errPublishClosed
		}
		if len(b.queue) < b.incap {
			work := b.enqueueLocked(v)
			space := b.passSpaceLocked()
			b.mu.Unlock()
			wait.Signal(work)
			wait.Signal(space)
			return nil
		}
		// Wait outside the lock, so that Shutdown is never held up by a
		// blocked publisher.
		c := b.space.ParkLocked()
		b.mu.Unlock()
		ended := false
		select {
		case <-c:
		case <-b.life.Stopping().Done():
		case <-done:
			ended = true
		}
		b.mu.Lock()
		b.space.UnparkLocked()
		if ended {
			space := b.passSpaceLocked()
			b.mu.Unlock()
			wait.Signal(space)
			return ctx.Err()
		}
	}
}

// TryPublish queues v for every watcher if the incoming queue has room. It
// reports whether v was queued; it never blocks. A refusal is counted in
// Stats.DroppedIncoming. After Shutdown has begun it returns false and an
// error wrapping ErrClosed. TryPublish allocates nothing.
func (b *Broadcaster[T]) TryPublish(v T) (sent bool, err error) {
	b.mu.Lock()
	switch {
	case b.closed:
		b.mu.Unlock()
		return false, errTryPublishClosed
	case len(b.queue) >= b.incap:
		b.refused++
		b.mu.Unlock()
		return false, nil
	}
	work := b.enqueueLocked(v)
	b.mu.Unlock()
	wait.Signal(work)
	return true, nil
}

// enqueueLocked appends v to the incoming queue. It returns the channel to
// signal, once unlocked, to wake the distributor (see wait.Queue.WakeLocked).
func (b *Broadcaster[T]) enqueueLocked(v T) chan struct{} {
	b.queue = append(b.queue, v)
	b.enqueued++
	return b.work.WakeLocked()
}

// passSpaceLocked applies the hand-off rule to publishers: room left in the
// incoming queue goes on to the next parked publisher. It returns the
// channel to signal once unlocked.
func (b *Broadcaster[T]) passSpaceLocked() chan struct{} {
	if len(b.queue) < b.incap {
		return b.space.WakeLocked()
	}
	return nil
}

// queueMarkerLocked queues m at the current end of the incoming queue. It
// returns the channel to signal to wake the distributor.
func (b *Broadcaster[T]) queueMarkerLocked(m marker[T]) chan struct{} {
	m.pos = b.enqueued
	b.marks = append(b.marks, m)
	return b.work.WakeLocked()
}

// Shutdown stops the broadcaster, delivers what was queued, closes every
// watcher and waits for the distributor to exit (see # Shutdown). It returns
// nil once done, ctx.Err() if ctx ended first (full Block watchers then lose
// what they cannot take), or an error wrapping ErrClosed if another call
// abandoned values.
func (b *Broadcaster[T]) Shutdown(ctx context.Context) error {
	if ctx == nil {
		panic("broadcast: nil Context")
	}
	b.mu.Lock()
	b.closed = true
	b.life.Stop() // under mu: Done is closed as Watch and Publish start refusing
	b.mu.Unlock()
	// Signalled whether parked or not: this also reaches a distributor
	// waiting for room in a Block watcher.
	wait.Signal(b.work.C())
	if err := b.life.Shutdown(ctx); err != nil {
		return err // the distributor was aborted and has exited
	}
	return b.exitErr()
}

// exitErr is what Shutdown returns once the distributor has exited, unless
// its own context ended first: errShutdownAbandoned if a Shutdown gave up
// on values (its context ended), nil if every value queued was delivered.
func (b *Broadcaster[T]) exitErr() error {
	if b.abandonedAny() {
		return errShutdownAbandoned
	}
	return nil
}

// Done returns a channel that is closed when Shutdown begins: from then on
// Watch, WatchWith, Publish and TryPublish return errors wrapping
// ErrClosed. It lets a goroutine that feeds or serves the broadcaster
// notice the end without publishing.
func (b *Broadcaster[T]) Done() <-chan struct{} { return b.life.Stopping().Done() }

// requestStop asks the distributor to close w. Like Shutdown, it signals
// the distributor even when it is not parked for work, because a
// distributor waiting for room in a Block watcher serves Stop requests too.
func (b *Broadcaster[T]) requestStop(w *Watcher[T]) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.exited { // else the distributor closed w on its way out
		b.stops = append(b.stops, w)
		wait.Signal(b.work.C())
	}
}
