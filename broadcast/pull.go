package broadcast

import (
	"errors"

	"github.com/heraldgo/herald/internal/wait"
)

// Pulling reads: All and Next on a queue watcher take values from its
// front and ring under its mutex, parking on w.readers while there are
// none. An All loop takes a whole batch at a time; what it took and did
// not yield goes back to front, by index, when it ends early.

// A batch is what an All loop took from the queue: its values, where they
// sat in queue order, and how many it has yielded.
type batch[T any] struct {
	vals     []T
	frontIdx []uint64 // indices of vals[:len(frontIdx)], taken from front
	ringIdx  uint64   // index of the first value taken from the ring
	next     int      // vals[:next] are yielded
	out      bool     // taken, not yet all yielded or handed back
}

func (bt *batch[T]) index(i int) uint64 {
	if i < len(bt.frontIdx) {
		return bt.frontIdx[i]
	}
	return bt.ringIdx + uint64(i-len(bt.frontIdx))
}

// endLoan hands back what an All loop held when it ended, if anything.
func (w *Watcher[T]) endLoan(bt *batch[T]) {
	if bt.out {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.giveBackLocked(bt)
	}
}

// takeBatch hands back the batch an All loop held, if any, and lends it
// the next one, waiting for values, under one lock. It returns the channel
// instead for a channel watcher, and ErrClosed once the watcher is closed
// and empty.
func (w *Watcher[T]) takeBatch(bt *batch[T]) (chan T, error) {
	if p := w.events.Load(); p != nil {
		return *p, nil
	}
	var ch chan T
	var err error
	bt.vals, ch, err = w.takeInto(nil, bt.vals, -1, bt)
	return ch, err
}

// giveBackLocked ends bt's loan: its values not yet yielded go back to
// front, in their place by index.
func (w *Watcher[T]) giveBackLocked(bt *batch[T]) {
	rest := bt.vals[bt.next:]
	bt.out = false
	if len(rest) == 0 {
		return
	}
	back := make([]held[T], len(rest))
	for i, v := range rest {
		back[i] = held[T]{bt.index(bt.next + i), v}
		if back[i].idx >= w.prefix {
			w.back++ // a published value: it takes room in the queue again
		}
	}
	if len(w.front) == 0 {
		w.front = back // the usual case: one loop broke off
	} else {
		w.front = merge(w.front, back) // loops on other goroutines hold batches too
	}
	wait.Signal(w.readers.WakeLocked())
}

// merge returns the values of a and b, each sorted by index, in one slice
// sorted by index.
func merge[T any](a, b []held[T]) []held[T] {
	out := make([]held[T], 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].idx < b[0].idx {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// errDone tells take's callers that the done channel they gave was closed
// (their context ended); they return their context's error.
var errDone = errors.New("broadcast: context done")

// take appends up to limit queued values to the empty buf (all if limit
// is negative), in queue order, waiting until there is one. It returns the
// channel instead for a channel watcher, ErrClosed once the watcher is
// closed and empty, and errDone if done is closed while nothing is queued.
// It never calls into the caller's context, so that no user code runs
// under mu.
func (w *Watcher[T]) take(done <-chan struct{}, buf []T, limit int) ([]T, chan T, error) {
	return w.takeInto(done, buf, limit, nil)
}

// takeInto is take; with bt non-nil the values are lent to bt, and the
// batch bt held, if any, is given back first (under the same lock).
func (w *Watcher[T]) takeInto(done <-chan struct{}, buf []T, limit int, bt *batch[T]) ([]T, chan T, error) {
	w.mu.Lock()
	buf, ch, err := w.takeLocked(done, buf, limit, bt)
	// The hand-off, after unlocking: room for the distributor if it waits
	// on a Block watcher, and whatever is left for the next reader.
	writer, reader := w.writer.WakeLocked(), w.passOnLocked()
	w.mu.Unlock()
	if writer != nil {
		wait.Signal(writer)
	}
	if reader != nil {
		wait.Signal(reader)
	}
	return buf, ch, err
}

// takeLocked is takeInto under w.mu. The first read that gets here makes
// the watcher a queue watcher, unless Events made it a channel watcher.
func (w *Watcher[T]) takeLocked(done <-chan struct{}, buf []T, limit int, bt *batch[T]) ([]T, chan T, error) {
	if w.ch != nil {
		return buf, w.ch, nil
	}
	w.pulled = true
	if bt != nil {
		if bt.out {
			w.giveBackLocked(bt)
		}
		clear(buf)
		buf, bt.frontIdx = buf[:0], bt.frontIdx[:0]
	}
	for len(w.front)+w.queue.Len() == 0 {
		if w.closed {
			return buf, nil, ErrClosed
		}
		select {
		case <-done:
			return buf, nil, errDone
		default:
		}
		w.waitLocked(done)
	}
	if limit < 0 {
		limit = len(w.front) + w.queue.Len()
	}
	buf = w.takeFrontLocked(buf, limit, bt)
	if bt != nil {
		bt.ringIdx = w.prefix + w.pushed - uint64(w.queue.Len())
	}
	buf = w.queue.PopTo(buf, min(limit-len(buf), w.queue.Len()))
	if bt != nil {
		bt.next, bt.out = 0, true
	}
	return buf, nil, nil
}

// takeFrontLocked appends up to limit values of front to buf, which is
// empty, recording their indices in bt if it is not nil.
func (w *Watcher[T]) takeFrontLocked(buf []T, limit int, bt *batch[T]) []T {
	k := min(limit, len(w.front))
	for _, h := range w.front[:k] {
		buf = append(buf, h.v)
		if bt != nil {
			bt.frontIdx = append(bt.frontIdx, h.idx)
		}
		if h.idx >= w.prefix {
			w.back--
		}
	}
	clear(w.front[:k])
	if w.front = w.front[k:]; len(w.front) == 0 {
		w.front = nil
	}
	return buf
}

// passOnLocked applies the hand-off rule to readers: a reader that leaves
// wakes the next parked one if there is anything for it — values, or the
// close, which every reader must see. It returns the channel to signal
// once unlocked.
func (w *Watcher[T]) passOnLocked() chan struct{} {
	if len(w.front)+w.queue.Len() > 0 || w.closed {
		return w.readers.WakeLocked()
	}
	return nil
}

// waitLocked parks the caller until another goroutine wakes it (values
// arrived, the watcher closed, or another reader handed a wake-up on), or
// done is closed.
func (w *Watcher[T]) waitLocked(done <-chan struct{}) {
	c := w.readers.ParkLocked()
	w.mu.Unlock()
	if done == nil { // All: nothing else ends the wait
		<-c
	} else {
		select {
		case <-c:
		case <-done:
		}
	}
	w.mu.Lock()
	w.readers.UnparkLocked()
}
