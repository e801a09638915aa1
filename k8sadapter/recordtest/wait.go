package recordtest

import "context"

// Waiting, without polling: a waiter reads under the lock what it needs
// and the channel r.changed, checks outside the lock, and if it has to
// wait, waits for that channel, which the next change closes. A change
// made after the read closes the channel the waiter holds, so none is
// missed. The channel is made only when someone waits.
//
// So that a waiter need not copy and check every event on every change,
// and misses no state an event went through, r.changes lists each event
// a change appended or patched, as it was right after that change:
// WaitFor reads the changes since its last look, one by one, so that an
// event whose count went from 1 to 5 meanwhile is shown with 2, 3, 4 and
// 5.

// Wait blocks until at least n events are kept, and returns them (as
// Events). It returns ctx.Err() if ctx ends first. With Options.Correlate
// a folded or skipped call adds no event.
func (r *Recorder) Wait(ctx context.Context, n int) ([]Event, error) {
	for {
		r.mu.Lock()
		if len(r.events) >= n {
			events := append([]Event(nil), r.events...)
			r.mu.Unlock()
			return events, nil
		}
		changed := r.changedChanLocked()
		r.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// WaitFor blocks until an event kept satisfies match, and returns it:
// the first in order of the events kept when it is called, then the first
// to change (kept, or its count grown) that does. Each change is shown to
// match as the event was right after it: every count an event reaches
// after the call is seen, however many changes came between two looks
// (an event counted 1 when WaitFor is called and 5 when it looks again is
// shown with the counts 2, 3, 4 and 5). It calls match on the goroutine
// that called WaitFor, outside r's lock. It returns ctx.Err() if ctx ends
// first.
func (r *Recorder) WaitFor(ctx context.Context, match func(Event) bool) (Event, error) {
	var c cursor
	for {
		events, changed := r.since(&c)
		for _, e := range events {
			if match(e) {
				return e, nil
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// cursor is how far a waiter has read r.changes.
type cursor struct {
	read bool // false: nothing read yet
	gen  int  // r.gen when read
	pos  int  // len(r.changes) when read
}

// since returns a copy of the events as each change since c was last
// moved left them (all the events kept, as they are, the first time or
// after a Reset), moves c, and returns a channel that the next change
// closes.
func (r *Recorder) since(c *cursor) ([]Event, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var events []Event
	if !c.read || c.gen != r.gen {
		events = append(events, r.events...)
	} else {
		events = append(events, r.changes[c.pos:]...)
	}
	c.read, c.gen, c.pos = true, r.gen, len(r.changes)
	return events, r.changedChanLocked()
}

// changedChanLocked returns the channel that the next change closes.
func (r *Recorder) changedChanLocked() <-chan struct{} {
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return r.changed
}

// changedLocked notes that the event at index i was kept or patched, as
// it is now, and wakes the waiters, if any.
func (r *Recorder) changedLocked(i int) {
	r.changes = append(r.changes, r.events[i])
	r.wakeLocked()
}

// wakeLocked wakes the waiters, if any.
func (r *Recorder) wakeLocked() {
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}
