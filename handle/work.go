package handle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/heraldgo/herald/internal/wait"
)

// errVoid is the failure of a value its TurnSource no longer holds (see
// Pool.holds): it gets its fate without a handler, abandoned.
var errVoid = errors.New("handle: the source's reader no longer holds the value")

// holds reports whether the value e may be handled now: always, but for a
// TurnSource's value, which waits while its reader is fenced in its turn,
// and is not handled once its turn is over or the Pool stops meanwhile.
func (p *Pool[T, K]) holds(e entry[T]) bool {
	if p.turns == nil || e.seq == 0 {
		return true
	}
	for {
		h, changed := p.turns.Holds(e.seq, e.turn)
		switch h {
		case Held:
			return true
		case Void:
			return false
		}
		select {
		case <-changed:
		case <-p.g.Stopping().Done():
			return false
		}
	}
}

// errExhausted is the failure of a value whose source delivered it
// MaxAttempts times before (its readers died in its handler): it is
// dead-lettered without a handler.
var errExhausted = errors.New("handle: the value was handled Options.MaxAttempts times before, across its source's deliveries (a reader died in its handler): not handled again")

// maxRun is how many values of one key a worker handles in a row before
// it lets the key queue again behind the other ready keys.
const maxRun = 64

// work is a worker goroutine: it handles the head of one ready lane at a
// time, until Shutdown. It goes on with the same lane while that lane has
// values (up to maxRun in a row), which spares the ready queue and a
// wake-up per value.
func (p *Pool[T, K]) work(i int) {
	var (
		l   *lane[T, K]
		e   entry[T]
		err error
		run int
		ctx = &valueCtx{Context: p.g.Aborting()} // made once, told each value
	)
	for {
		if l != nil && err == nil {
			// Handled: marked done in its source before it is counted, so
			// that a Flush that returns has told the source.
			p.done(e)
		}
		p.mu.Lock()
		if l != nil {
			if l = p.finishLocked(l, e, err, run < maxRun); l == nil {
				run = 0
				p.held[i] = nil
			}
		}
		if l == nil {
			if l = p.nextReadyLocked(); l == nil {
				p.mu.Unlock()
				return
			}
			p.held[i] = l
		}
		e = p.startLocked(l)
		run++
		p.mu.Unlock()
		switch {
		case l.dead != nil || e.before >= p.o.MaxAttempts:
			err = errExhausted // a dead letter stored again, or failed that often before: not handled again
		case !p.holds(e):
			err = errVoid // another reader's now, or the Pool is stopping
		default:
			ctx.seq, ctx.attempt = e.seq, e.before+l.tries+1
			err = p.call(ctx, e.v)
		}
	}
}

// spinTries is how many times a worker that found no ready lane yields
// and looks again before it parks; one worker at a time does.
const spinTries = 16

// nextReadyLocked waits for a ready lane and takes it; it returns nil once
// the Pool is stopped. Before it parks, one worker at a time yields and
// looks again a few times: with short handlers, the next value comes
// sooner than a parked worker wakes.
func (p *Pool[T, K]) nextReadyLocked() *lane[T, K] {
	if !p.stopped && p.ready.Len() == 0 && p.spinning == 0 {
		p.spinning++
		for range spinTries {
			p.mu.Unlock()
			runtime.Gosched()
			p.mu.Lock()
			if p.stopped || p.ready.Len() > 0 {
				break
			}
		}
		p.spinning--
	}
	for !p.stopped && p.ready.Len() == 0 {
		c := p.workers.ParkLocked()
		p.mu.Unlock()
		select {
		case <-c:
		case <-p.g.Stopping().Done():
		}
		p.mu.Lock()
		p.workers.UnparkLocked()
	}
	if p.stopped {
		return nil
	}
	l := p.ready.Pop()
	if p.ready.Len() > 0 {
		wait.Signal(p.workers.WakeLocked()) // the hand-off rule: work left for another
	}
	return l
}

// startLocked begins an attempt of l's head, and returns it.
func (p *Pool[T, K]) startLocked(l *lane[T, K]) entry[T] {
	e := l.vals.Peek()
	l.running = true
	switch {
	case l.dead != nil:
		// Its dead letter stored again: no attempt.
	case l.tries == 0:
		// The supervisor's clock, not time.Now: a clock read costs as
		// much as the rest of a value's way through the Pool (see
		// BenchmarkEmptyHandler), and this one is right to a tick.
		l.first = p.clock()
		l.last = l.first
		l.begun = p.begun
		p.begun++
	default:
		p.stats.Retries++
		l.last = time.Now()
	}
	p.stats.Waiting--
	p.stats.InFlight++
	return e
}

// call runs the handler, turning a panic into an error.
func (p *Pool[T, K]) call(ctx context.Context, v T) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handle: handler panicked: %v", r)
			p.mu.Lock()
			p.stats.Panics++
			p.mu.Unlock()
			if n, due := p.logPanic.Add(time.Now(), 1); due {
				p.o.Logger.Warn("handle: handler panicked (handled as a failure)", slog.String("panic", fmt.Sprintf("%T", r)), slog.Uint64("count", n))
			}
		}
	}()
	return p.fn(ctx, v)
}

// finishLocked gives the head e of lane l its fate after an attempt that
// returned err: handled (marked done already), a retry after a wait, or a
// dead letter (stored, and marked done, with the lock released). It
// returns the lane the worker goes on with: l again, if it holds more
// values and more allows it.
func (p *Pool[T, K]) finishLocked(l *lane[T, K], e entry[T], err error, more bool) *lane[T, K] {
	var f Failure
	if l.dead != nil { // its dead letter, stored again
		f, l.dead = *l.dead, nil
		if p.stopped {
			p.popLocked(l, e, &p.stats.Abandoned, false)
			return nil
		}
		return p.storeDeadLocked(l, e, f, more)
	}
	if err != errExhausted && err != errVoid {
		l.tries++
	}
	attempts := e.before + l.tries
	switch {
	case err == nil:
		return p.popLocked(l, e, &p.stats.Handled, more)
	case err == errVoid:
		if !p.stopped {
			p.stats.Voided++
		}
		return p.popLocked(l, e, &p.stats.Abandoned, more)
	case p.stopped:
		p.popLocked(l, e, &p.stats.Abandoned, false)
		return nil
	case !errors.Is(err, ErrPermanent) && attempts < p.o.MaxAttempts:
		p.waitRetryLocked(l)
		return nil
	}
	f = Failure{Err: err, Attempts: attempts, First: l.first, Last: l.last}
	return p.storeDeadLocked(l, e, f, more)
}

// storeDeadLocked gives up on the head e of lane l, failed as f: it
// stores its dead letter (with the lock released), or, if that fails,
// has it stored again after a wait. It returns as finishLocked does.
func (p *Pool[T, K]) storeDeadLocked(l *lane[T, K], e entry[T], f Failure, more bool) *lane[T, K] {
	p.mu.Unlock()
	r, before := p.giveUp(l.key, e, f)
	if r == stored {
		p.done(e) // before it is counted, as a handled value
	}
	p.mu.Lock()
	switch {
	case r == stored:
		return p.popLocked(l, e, &p.stats.DeadLettered, more)
	case r == unconfirmed:
		p.popLocked(l, e, nil, false)
		p.unsureLocked(e.ord, before)
	case p.stopped:
		p.popLocked(l, e, &p.stats.Abandoned, false)
	default:
		l.dead = &f // stored again after a wait; not handled again
		p.waitRetryLocked(l)
	}
	return nil
}

// waitRetryLocked makes l's head, just failed, wait out its retry.
func (p *Pool[T, K]) waitRetryLocked(l *lane[T, K]) {
	l.running = false
	p.failed.push(l) // unless it is there
	p.stats.InFlight--
	p.stats.Backoff++
	l.retryAt = time.Now().Add(p.backoff(max(l.tries, 1)))
	if p.retry.push(l) {
		wait.Signal(p.wakeSup) // the earliest retry changed
	}
}

// popLocked removes l's head e, now fated (counted by countLocked), and
// releases the lane: to the caller if it holds more values and more is
// set, to the ready queue if it holds more, to the free list otherwise.
// It returns the lane if the caller goes on with it, nil otherwise.
func (p *Pool[T, K]) popLocked(l *lane[T, K], e entry[T], count *uint64, more bool) *lane[T, K] {
	l.vals.Pop()
	l.running, l.tries, l.dead = false, 0, nil
	p.failed.remove(l)
	p.countLocked(e.ord, count)
	switch {
	case l.vals.Len() > 0 && more:
		return l
	case l.vals.Len() > 0:
		p.readyLocked(l)
		return nil
	}
	if p.key == nil {
		p.free = append(p.free, l)
		return nil
	}
	// The key's lane stays, idle, for its next value: a key seen again
	// soon costs no map write. Idle lanes are swept once they are many.
	p.idle++
	if p.idle > max(idleLanes, p.o.QueueLength) {
		p.sweepIdleLocked()
	}
	return nil
}

// idleLanes is how many idle lanes a Pool keeps, at least, before it
// sweeps them: at most one sweep of the map per that many values.
const idleLanes = 1024

// sweepIdleLocked frees the lanes that hold no value.
func (p *Pool[T, K]) sweepIdleLocked() {
	var zero K
	for k, l := range p.keys {
		if l.vals.Len() == 0 && !l.running {
			delete(p.keys, k)
			l.key = zero
			if len(p.free) < idleLanes {
				p.free = append(p.free, l)
			}
		}
	}
	p.idle = 0
}

// fateLocked records that the value of order ord has its fate: Flush may
// return, and the reader, if the Pool was full, may have room.
func (p *Pool[T, K]) fateLocked(ord uint64) {
	p.floor.Advance(p.ords.fate(ord))
	if p.reader.Parked() > 0 && !p.full() {
		wait.Signal(p.reader.WakeLocked())
	}
}

// done tells an AckSource that e has its fate (nothing for the zero
// entry).
func (p *Pool[T, K]) done(e entry[T]) {
	switch {
	case e.seq == 0:
	case p.turns != nil:
		p.turns.DoneTurn(e.seq, e.turn)
	case p.acks != nil:
		p.acks.Done(e.seq)
	}
}

// countLocked gives the value of order ord, counted in flight, its fate,
// counted in *count; a nil count leaves it in flight, for unsureLocked.
func (p *Pool[T, K]) countLocked(ord uint64, count *uint64) {
	if count == nil {
		return
	}
	p.stats.InFlight--
	*count++
	p.fateLocked(ord)
}
