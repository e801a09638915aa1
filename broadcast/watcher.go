package broadcast

import (
	"context"
	"iter"
	"sync"
	"sync/atomic"
)

// Watcher receives the values of one Broadcaster, in queue order, from the
// moment it was registered until it is stopped or the broadcaster shuts
// down. Read it in one of three ways, which share one queue (each value goes
// to whichever read takes it):
//
//   - Events, a channel, for use in select statements;
//   - Next, one value at a time with a context;
//   - All, an iterator, the fastest: it takes the queued values in batches.
//
// A Watcher is safe for concurrent use. Its zero value is not usable; get
// one from Broadcaster.Watch, WatchWith or WatchWithPrefix, and call Stop
// when done with it.
type Watcher[T any] struct {
	b     *Broadcaster[T]
	full  FullPolicy
	start uint64 // sequence number of the first value owed to it; set under b.mu

	stopOnce  sync.Once
	done      chan struct{} // closed by the distributor once the watcher is closed
	dropped   atomic.Uint64
	delivered atomic.Uint64
	gone      bool // closed; owned by the distributor

	mu            sync.Mutex // guards the fields below
	ring          []T        // the queue, unless the watcher is read through Events
	head, n       int        // ring[head] is the oldest of n queued values
	leftover      []T        // values an All loop took but did not yield; read first
	closed        bool       // no value will be added any more
	ch            chan T     // non-nil once Events was called: the queue from then on
	readers       int        // readers parked on dataReady
	writerWaiting bool       // the distributor is parked on space

	dataReady chan struct{}          // cap 1: values arrived, or the watcher closed
	space     chan struct{}          // cap 1: a Block watcher made room
	events    atomic.Pointer[chan T] // ch, readable without mu
}

func newWatcher[T any](b *Broadcaster[T], qlen int, full FullPolicy, prefix []T) *Watcher[T] {
	size := qlen
	if len(prefix) > 0 && len(prefix)+1 > size {
		size = len(prefix) + 1
	}
	w := &Watcher[T]{
		b:         b,
		full:      full,
		done:      make(chan struct{}),
		ring:      make([]T, size),
		dataReady: make(chan struct{}, 1),
		space:     make(chan struct{}, 1),
	}
	w.n = copy(w.ring, prefix)
	return w
}

// Events returns the channel on which the watcher's values arrive. The
// channel is closed after Stop or Shutdown, once the distributor has
// delivered what it owed; values already in it stay readable. Its capacity is
// the watcher's queue length.
//
// The first call switches the watcher to channel delivery, which costs one
// channel operation per value; All is faster where a loop will do.
func (w *Watcher[T]) Events() <-chan T {
	if p := w.events.Load(); p != nil {
		return *p
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		// Move what is queued into the channel; it is new and large enough,
		// so none of these sends blocks.
		ch := make(chan T, max(len(w.ring), len(w.leftover)+w.n))
		for _, v := range w.leftover {
			ch <- v
		}
		w.leftover = nil
		for w.n > 0 {
			ch <- w.popLocked()
		}
		w.ring = nil
		w.ch = ch
		if w.closed {
			close(ch)
		}
		w.events.Store(&ch)
		w.signalWriterLocked()
		if w.readers > 0 {
			signal(w.dataReady) // parked Next calls switch to the channel
		}
	}
	return w.ch
}

// Next returns the watcher's next value, waiting for one if none is queued.
// It returns ctx.Err() if ctx ends first, and ErrClosed once the watcher is
// stopped or its broadcaster shut down and every queued value has been read.
// It panics on a nil ctx.
func (w *Watcher[T]) Next(ctx context.Context) (T, error) {
	if ctx == nil {
		panic("broadcast: nil Context")
	}
	var one [1]T
	for {
		if p := w.events.Load(); p != nil {
			// A value or the close wins over an ended ctx, as in the ring.
			select {
			case v, ok := <-*p:
				return v, closedErr(ok)
			default:
			}
			select {
			case v, ok := <-*p:
				return v, closedErr(ok)
			case <-ctx.Done():
				var zero T
				return zero, ctx.Err()
			}
		}
		got, err := w.take(ctx, one[:0], 1)
		if err == errChannel {
			continue
		}
		if err != nil {
			var zero T
			return zero, err
		}
		return got[0], nil
	}
}

// All returns an iterator over the watcher's values. Each iteration waits
// for values and ends once the watcher is stopped or its broadcaster shut
// down and every queued value has been read. All takes whatever is queued in
// one step, so it costs far less per value than Events or Next; values it
// took but did not yield when the loop breaks stay queued for the next read.
func (w *Watcher[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		var buf []T
		for {
			if p := w.events.Load(); p != nil {
				for v := range *p {
					if !yield(v) {
						return
					}
				}
				return
			}
			var err error
			buf, err = w.take(context.Background(), buf[:0], -1)
			if err == errChannel {
				continue
			}
			if err != nil {
				return
			}
			for i, v := range buf {
				if !yield(v) {
					w.putBack(buf[i+1:])
					clear(buf)
					return
				}
			}
			clear(buf)
		}
	}
}

// Stop ends the watcher: the broadcaster delivers nothing more to it, and
// once Stop returns its Events channel is closed and Next and All end after
// the values still queued. Stop is idempotent, safe to call from any
// goroutine (including the one reading), and never waits for a value to be
// read, by this watcher or by any other.
func (w *Watcher[T]) Stop() {
	w.stopOnce.Do(func() {
		// The distributor closes the watcher; wake serves it even while
		// the distributor waits for room in a Block watcher.
		b := w.b
		b.mu.Lock()
		b.stops = append(b.stops, w)
		b.mu.Unlock()
		signal(b.wake)
	})
	select {
	case <-w.done:
	case <-w.b.done: // the distributor closed every watcher on its way out
	}
}

// Dropped returns how many values owed to this watcher were lost: skipped or
// discarded by its FullPolicy, or abandoned by a Shutdown whose context
// ended.
func (w *Watcher[T]) Dropped() uint64 { return w.dropped.Load() }

// Delivered returns how many published values were placed in this
// watcher's queue (a prefix given to WatchWithPrefix is not counted). After
// Broadcaster.Flush returns, it counts at least every value queued before
// the Flush call that this watcher did not drop: a reader that has taken
// Delivered values, less those a DropOldest watcher discarded, has seen
// them all.
func (w *Watcher[T]) Delivered() uint64 { return w.delivered.Load() }

func closedErr(ok bool) error {
	if ok {
		return nil
	}
	return ErrClosed
}

// errChannel tells a reader that the watcher switched to channel delivery.
var errChannel = &channelSwitch{}

type channelSwitch struct{}

func (*channelSwitch) Error() string { return "broadcast: watcher reads through Events" }

// take appends queued values to buf, at most limit of them (all if limit is
// negative), waiting until there is at least one. It returns ErrClosed when
// the watcher is closed and empty, and errChannel after a switch to Events.
func (w *Watcher[T]) take(ctx context.Context, buf []T, limit int) ([]T, error) {
	w.mu.Lock()
	for {
		if w.ch != nil {
			w.mu.Unlock()
			return buf, errChannel
		}
		if len(w.leftover)+w.n > 0 {
			break
		}
		if w.closed {
			if w.readers > 0 {
				signal(w.dataReady) // the next parked reader sees it too
			}
			w.mu.Unlock()
			return buf, ErrClosed
		}
		w.readers++
		w.mu.Unlock()
		var err error
		select {
		case <-w.dataReady:
		case <-ctx.Done():
			err = ctx.Err()
		}
		w.mu.Lock()
		w.readers--
		if err != nil {
			w.mu.Unlock()
			return buf, err
		}
	}
	if limit < 0 {
		limit = len(w.leftover) + w.n
	}
	for len(w.leftover) > 0 && limit > 0 {
		buf = append(buf, w.leftover[0])
		var zero T
		w.leftover[0] = zero
		w.leftover = w.leftover[1:]
		limit--
	}
	for w.n > 0 && limit > 0 {
		buf = append(buf, w.popLocked())
		limit--
	}
	w.signalWriterLocked()
	if w.readers > 0 && len(w.leftover)+w.n > 0 {
		signal(w.dataReady) // more for another parked reader
	}
	w.mu.Unlock()
	return buf, nil
}

// putBack returns values an All loop took but did not yield. They are read
// before anything still in the ring.
func (w *Watcher[T]) putBack(vals []T) {
	if len(vals) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil {
		// Events was called from inside the loop. A channel has no front to
		// put values back at, so rather than reorder them they are counted
		// as dropped.
		w.dropped.Add(uint64(len(vals)))
		return
	}
	w.leftover = append(append(make([]T, 0, len(vals)+len(w.leftover)), vals...), w.leftover...)
	if w.readers > 0 {
		signal(w.dataReady)
	}
}

// popLocked removes and returns the oldest value in the ring.
func (w *Watcher[T]) popLocked() T {
	v := w.ring[w.head]
	var zero T
	w.ring[w.head] = zero
	w.head++
	if w.head == len(w.ring) {
		w.head = 0
	}
	w.n--
	return v
}

// signalWriterLocked wakes the distributor if it waits for room.
func (w *Watcher[T]) signalWriterLocked() {
	if w.writerWaiting {
		w.writerWaiting = false
		signal(w.space)
	}
}

// pushLocked places vals in the ring according to w's policy. It returns how
// many of vals it consumed (fewer than len(vals) only for a full Block
// watcher), how many it placed in the ring, and how many values it dropped.
func (w *Watcher[T]) pushLocked(vals []T) (consumed, placed, dropped int) {
	size := len(w.ring)
	free := size - w.n
	switch w.full {
	case DropNewest:
		k := min(len(vals), free)
		w.appendLocked(vals[:k])
		return len(vals), k, len(vals) - k
	case DropOldest:
		if len(vals) >= size {
			// The newest size values replace everything.
			dropped = w.n + len(vals) - size
			clear(w.ring)
			w.head, w.n = 0, 0
			w.appendLocked(vals[len(vals)-size:])
			return len(vals), len(vals), dropped
		}
		if over := len(vals) - free; over > 0 {
			for range over {
				w.popLocked()
			}
			dropped = over
		}
		w.appendLocked(vals)
		return len(vals), len(vals), dropped
	default: // Block
		k := min(len(vals), free)
		w.appendLocked(vals[:k])
		return k, k, 0
	}
}

// appendLocked copies vals, which fit, behind the queued values.
func (w *Watcher[T]) appendLocked(vals []T) {
	tail := w.head + w.n
	if tail >= len(w.ring) {
		tail -= len(w.ring)
	}
	k := copy(w.ring[tail:], vals)
	copy(w.ring, vals[k:])
	w.n += len(vals)
}
