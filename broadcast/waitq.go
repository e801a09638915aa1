package broadcast

// A waitq parks goroutines until a condition, guarded by its owner's
// mutex, may have become true. The Broadcaster has four: the distributor
// waiting for work, publishers waiting for room in the incoming queue, the
// distributor waiting for room in a full Block watcher, and readers waiting
// for a watcher's values.
//
// A waiter, holding the mutex, finds the condition false, calls parkLocked,
// unlocks, and receives from the channel it got (in a select with whatever
// else may end its wait); it then locks again, calls unparkLocked and
// checks the condition anew. A goroutine that makes the condition true
// calls wakeLocked under the mutex.
//
// The hand-off rule: one signal wakes one waiter. A waiter that wakes,
// takes its share and leaves the condition true for others calls
// wakeLocked before it unlocks, so that no waiter stays parked while the
// condition holds. The channel has room for one signal, so a signal sent
// between a waiter's unlock and its receive is kept, never lost; a signal
// nobody needed only makes the next waiter check its condition once more.
//
// A change that is final for every waiter (a watcher closed, a switch to
// channel delivery) is passed on by the same rule: it leaves the condition
// true for every waiter, so each one that wakes wakes the next. A waiter
// thus selects on its waitq's channel and nothing else but its own
// context, which keeps parking cheap.
type waitq struct {
	n int           // parked goroutines; guarded by the owner's mutex
	c chan struct{} // capacity 1
}

func newWaitq() waitq { return waitq{c: make(chan struct{}, 1)} }

// parkLocked counts the caller as parked and returns the channel to wait on.
func (q *waitq) parkLocked() <-chan struct{} {
	q.n++
	return q.c
}

// unparkLocked counts the caller as no longer parked.
func (q *waitq) unparkLocked() { q.n-- }

// wakeLocked returns the channel to signal to wake one parked goroutine,
// or nil if none needs waking: none is parked, or a signal is still
// pending (sent, not yet received), which already wakes one; len(q.c) is
// read without locking the channel. The caller signals after it unlocks,
// so that the goroutine it wakes does not at once wait for the mutex its
// waker still holds; where that does not matter, signal(q.wakeLocked())
// under the lock will do.
func (q *waitq) wakeLocked() chan struct{} {
	if q.n > 0 && len(q.c) == 0 {
		return q.c
	}
	return nil
}

// signal makes a non-blocking send on a capacity-1 channel: a signal
// already pending is as good as two. A nil c sends nothing.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
