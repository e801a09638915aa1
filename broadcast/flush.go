package broadcast

import (
	"context"

	"github.com/heraldgo/herald/internal/wait"
)

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
// Flush returns ctx.Err() if ctx ends first, and an error wrapping
// ErrClosed if Shutdown has completed, or gave up on a full Block watcher
// (its context ended) before every value queued before the call was
// placed. While Shutdown is flushing, Flush waits for it. Flush panics on
// a nil ctx.
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
	wait.Signal(work)
	if closed {
		exited := b.life.Exited()
		select {
		case <-exited:
			return errFlushShutDown
		default:
		}
		// Shutdown delivers everything queued before it: wait for it.
		return b.waitFlushed(ctx, exited, b.abandonedAny)
	}
	return b.waitFlushed(ctx, f.reached, func() bool { return f.abandoned })
}

// waitFlushed waits for reached, then returns errFlushAbandoned if abandoned
// reports that a value before the flush was given up on; or ctx.Err() if
// ctx ends first.
func (b *Broadcaster[T]) waitFlushed(ctx context.Context, reached <-chan struct{}, abandoned func() bool) error {
	select {
	case <-reached:
		if abandoned() {
			return errFlushAbandoned
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
	reached   chan struct{} // closed when the distributor has reached the marker
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
