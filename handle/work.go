package handle

import (
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"time"

	"github.com/heraldgo/herald/internal/wait"
)

// errVoid is the failure of a value its TurnSource no longer holds (see
// Pool.holds): it gets its fate without a handler, abandoned.
var errVoid = errors.New("handle: the source's reader no longer holds the value")

// holds reports whether the value e may be handled now: always, but for a
// TurnSource's value, which waits while its reader is fenced in its turn,
// and is not handled once its turn is over or the Pool stops meanwhile.
func (p *Pool[T, K]) holds(e *entry[T]) bool {
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

// work is worker i's first goroutine: it handles the head of one ready
// lane at a time, until Shutdown (see loop).
func (p *Pool[T, K]) work(i int) { p.workFrom(&worker[T, K]{i: i}) }

// worker is a worker's state across its loops, and its goroutines: the
// head e of lane l of shard s, begun as the run-th of l in a row, whose
// handler did not return, and its failure.
type worker[T any, K comparable] struct {
	i   int
	s   *shard[T, K]
	l   *lane[T, K]
	e   *entry[T]
	err error
	run int
	// pending: the fields above hold a value whose handler did not
	// return, from which the next loop goes on, on this goroutine or, if
	// it ends (runtime.Goexit), on a new one (see exited). counted: its
	// failure is counted in Panics already.
	pending, counted bool
}

// workFrom is a worker's goroutine: it runs the worker's loop again
// after each handler's panic, on the same goroutine. A handler that calls
// runtime.Goexit (or whose panic's value or Logger does, as its failure
// is told) ends the goroutine: another goes on from its value.
func (p *Pool[T, K]) workFrom(w *worker[T, K]) {
	ctx := &valueCtx{Context: p.g.Aborting()} // made once, told each value
	defer func() {
		if w.pending {
			p.exited(w)
		}
	}()
	for p.loop(w, ctx) {
		// A handler panicked: the next loop begins with its value's fate.
	}
}

// loop handles the head of one ready lane at a time, until Shutdown
// (false), or until a handler panics (true: w holds its value). It goes
// on with the same lane while that lane has values (up to maxRun in a
// row), which spares the ready queue and a wake-up per value, then with
// another of the same shard, then looks for work (see find). One
// deferred recover for a loop, not one a value: that would cost a tenth
// of an empty handler's way through the Pool.
func (p *Pool[T, K]) loop(w *worker[T, K], ctx *valueCtx) (panicked bool) {
	i, s, l, e, err, run := w.i, w.s, w.l, w.e, w.err, w.run
	w.pending, w.counted = false, false
	inHandler := false // set while the handler runs and its error is read: a panic or Goexit there leaves it set
	defer func() {
		if inHandler {
			w.s, w.l, w.e, w.run, w.pending = s, l, e, run, true
			panicked = p.recovered(w, recover())
		}
	}()
	for {
		from := i & int(p.mask) // its own shard first
		if l != nil {
			l, e, run, from = p.finish(i, s, l, e, err, run)
		}
		if l == nil {
			if s, l, e = p.find(i, from); l == nil {
				return false
			}
			run = 1
		}
		switch {
		case l.dead != nil || e.before >= p.o.MaxAttempts:
			err = errExhausted // a dead letter stored again, or failed that often before: not handled again
		case !p.holds(e):
			err = errVoid // another reader's now, or the Pool is stopping
		default:
			ctx.seq, ctx.attempt = e.seq, e.before+l.tries+1
			inHandler = true
			if err = p.fn(ctx, e.v); err != nil {
				err = checked(err) // not inlined (it defers): called only for an error
			}
			inHandler = false
		}
	}
}

// errGoexit is the failure of an attempt whose handler called
// runtime.Goexit.
var errGoexit = errors.New("handle: handler called runtime.Goexit (t.FailNow and t.Fatal do: report from a handler with t.Error, or return an error)")

// recovered gives w's attempt, whose handler did not return, its
// failure, and reports whether the worker goes on from it on this
// goroutine: if the handler panicked with r, counted in Panics (before
// the value's fate), described, and logged in bursts; if it called
// runtime.Goexit (r is nil), the goroutine ends (see exited). A panic's
// value or the Logger may call runtime.Goexit too: w stays pending
// until it returns, so that a new goroutine goes on from the value.
func (p *Pool[T, K]) recovered(w *worker[T, K], r any) bool {
	if r == nil {
		return false
	}
	w.s.countPanic()
	w.counted = true
	w.err = fmt.Errorf("handle: handler panicked with a %T", r) // should describing r not return
	w.err = fmt.Errorf("handle: handler panicked: %s", panicText(r))
	p.warnPanic("handle: handler panicked (handled as a failure)", fmt.Sprintf("%T", r))
	return true
}

// exited has a new goroutine go on as worker w, whose goroutine ends
// with a value pending: its handler called runtime.Goexit (on the
// worker's goroutine: nothing else can, as the value is the worker's),
// or its error's methods, or, once it had panicked, its panic's value or
// the Logger did. A Goexit is a failure, a panic's kin: counted in Panics
// before the new goroutine gives the value its fate, and logged in
// bursts by this one once the new one is started (a Logger may call
// runtime.Goexit too).
func (p *Pool[T, K]) exited(w *worker[T, K]) {
	counted := w.counted
	if !counted {
		w.s.countPanic()
		w.err, w.counted = errGoexit, true
	}
	p.g.Relay(func() { p.workFrom(w) })
	if !counted {
		p.warnPanic("handle: handler called runtime.Goexit (handled as a failure)", errGoexit)
	}
}

// panicText returns r, a recovered panic's value, as %v prints it; or,
// if that panics (r's Error or String method does, and again as fmt
// reports it), its type.
func panicText(r any) (text string) {
	defer func() {
		if recover() != nil {
			text = fmt.Sprintf("a %T whose Error or String method panics", r)
		}
	}()
	return fmt.Sprint(r)
}

// finish gives the head e of lane l of shard s its fate after an attempt
// that returned err, and begins worker i's next attempt in the shard: at
// l's next value, or another ready lane's head, unless a shard is
// starved (see findStarved): it goes there then. It returns nil if it
// begins none, and the shard to look at first then.
func (p *Pool[T, K]) finish(i int, s *shard[T, K], l *lane[T, K], e *entry[T], err error, run int) (*lane[T, K], *entry[T], int, int) {
	if err == nil {
		// Handled: marked done in its source before it is counted, so
		// that a Flush that returns has told the source.
		p.done(e)
	}
	from := s.idx
	s.mu.Lock()
	l, n, u := p.finishLocked(s, l, e, err, run < maxRun)
	if l == nil {
		run = 0
		s.held[i] = nil
		if m := p.starved.Load(); m != 0 && m&(1<<s.idx) == 0 {
			from = bits.TrailingZeros64(m)
		} else {
			l = s.takeLocked(p)
		}
	}
	if l != nil {
		s.held[i] = l
		e = s.startLocked(p, l)
		run++
	}
	more := s.work
	mixed, nMixed := s.mixed, s.mixedN
	s.mixedN = 0
	s.mu.Unlock()
	p.afterFate(n)
	if u != nil {
		p.keepUnsure(s, &u.e, u.before)
	}
	if nMixed > 0 {
		p.warnMixed(mixed, nMixed)
	}
	if more && run == 1 {
		p.wakeOne(-1) // the hand-off rule: work left for another
	}
	return l, e, run, from
}

// startLocked begins an attempt of l's head, and returns it: the
// worker's until it pops it.
func (s *shard[T, K]) startLocked(p *Pool[T, K], l *lane[T, K]) *entry[T] {
	e := l.vals.Head()
	l.running = true
	switch {
	case l.dead != nil:
		// Its dead letter stored again: no attempt.
	case l.tries == 0:
		// The supervisor's clock (p.now), not time.Now: a clock read
		// costs as much as the rest of a value's way through the Pool
		// (see BenchmarkEmptyHandler), and this one is right to a tick.
		l.first = p.now.Load()
		l.last = l.first
		l.begun = e.ord
	default:
		l.last = time.Now().UnixNano()
	}
	s.stats.Waiting--
	s.stats.InFlight++
	return e
}

// countPanic counts a handler's panic (or Goexit) in the shard's Panics.
func (s *shard[T, K]) countPanic() {
	s.mu.Lock()
	s.stats.Panics++
	s.mu.Unlock()
}

// warnPanic logs msg, with what of a handler's panic (or Goexit), in
// bursts.
func (p *Pool[T, K]) warnPanic(msg string, what any) {
	if n, due := p.logPanic.Add(time.Now(), 1); due {
		p.o.Logger.Warn(msg, slog.String("panic", fmt.Sprint(what)), slog.Uint64("count", n))
	}
}

// checked returns err, or, if err panics when asked what it is (a typed
// nil pointer whose Error or Unwrap reads through it), an error that says
// so: asked later, under a shard's lock or by a dead letter's reader, it
// would bring the process down.
func checked(err error) (out error) {
	if err == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			out = fmt.Errorf("handle: the handler returned an error (%T) that panics when read: %s", err, panicText(r))
		}
	}()
	_ = err.Error()
	_ = errors.Is(err, ErrPermanent)
	return err
}

// finishLocked gives the head e of lane l of shard s its fate after an
// attempt that returned err: handled (marked done already), a retry after
// a wait, or a dead letter (stored, and marked done, with the lock
// released). It returns the lane the worker goes on with: l again, if it
// holds more values and more allows it; what to do once the lock is
// released; and a value whose dead letter is unsure (see Pool.unsure).
func (p *Pool[T, K]) finishLocked(s *shard[T, K], l *lane[T, K], e *entry[T], err error, more bool) (*lane[T, K], fateNote, *unsureLetter[T, K]) {
	if l.dead != nil { // its dead letter, stored again
		f := *l.dead
		l.dead = nil
		if p.stopped.Load() {
			_, n := s.popLocked(p, l, e, &s.stats.Abandoned, false)
			return nil, n, nil
		}
		return p.storeDeadLocked(s, l, e, f, more)
	}
	if err != errExhausted && err != errVoid { // an attempt was made
		if l.tries > 0 {
			s.stats.Retries++ // counted made, not begun: a voided one is none
		}
		l.tries++
	}
	attempts := e.before + l.tries
	switch {
	case err == nil:
		l, n := s.popLocked(p, l, e, &s.stats.Handled, more)
		return l, n, nil
	case err == errVoid:
		return p.voidLocked(s, l, e, more)
	case p.stopped.Load():
		_, n := s.popLocked(p, l, e, &s.stats.Abandoned, false)
		return nil, n, nil
	case !errors.Is(err, ErrPermanent) && attempts < p.o.MaxAttempts:
		p.waitRetryLocked(s, l)
		return nil, fateNote{}, nil
	}
	f := Failure{Err: err, Attempts: attempts, First: time.Unix(0, l.first), Last: time.Unix(0, l.last)}
	return p.storeDeadLocked(s, l, e, f, more)
}

// storeDeadLocked gives up on the head e of lane l, failed as f: it
// stores its dead letter (with the lock released), or, if that fails,
// has it stored again after a wait. It returns as finishLocked does.
func (p *Pool[T, K]) storeDeadLocked(s *shard[T, K], l *lane[T, K], e *entry[T], f Failure, more bool) (*lane[T, K], fateNote, *unsureLetter[T, K]) {
	s.mu.Unlock()
	if !p.holds(e) {
		// Another reader's now: it gives the value its fate (a dead
		// letter stored here would be one of a value it may handle).
		s.mu.Lock()
		return p.voidLocked(s, l, e, more)
	}
	r, before := p.giveUp(l.key, e, f)
	if r == stored {
		p.done(e) // before it is counted, as a handled value
	}
	s.mu.Lock()
	switch {
	case r == stored:
		l, n := s.popLocked(p, l, e, &s.stats.DeadLettered, more)
		return l, n, nil
	case r == unconfirmed:
		u := &unsureLetter[T, K]{s: s, e: *e, before: before} // before the pop: e is the head
		s.popLocked(p, l, e, nil, false)
		return nil, fateNote{}, u
	case p.stopped.Load():
		_, n := s.popLocked(p, l, e, &s.stats.Abandoned, false)
		return nil, n, nil
	}
	l.dead = &f // stored again after a wait; not handled again
	p.waitRetryLocked(s, l)
	return nil, fateNote{}, nil
}

// voidLocked abandons the head e of lane l, which its TurnSource no
// longer holds (counted Voided, unless the Pool is stopping), and returns
// as finishLocked does.
func (p *Pool[T, K]) voidLocked(s *shard[T, K], l *lane[T, K], e *entry[T], more bool) (*lane[T, K], fateNote, *unsureLetter[T, K]) {
	if !p.stopped.Load() {
		s.stats.Voided++
	}
	l, n := s.popLocked(p, l, e, &s.stats.Abandoned, more)
	return l, n, nil
}

// waitRetryLocked makes l's head, just failed, wait out its retry.
func (p *Pool[T, K]) waitRetryLocked(s *shard[T, K], l *lane[T, K]) {
	l.running = false
	s.failed.push(l) // unless it is there
	s.stats.InFlight--
	s.stats.Backoff++
	l.retryAt = time.Now().Add(p.backoff(max(l.tries, 1)))
	if s.retry.push(l) {
		wait.Signal(p.wakeSup) // the shard's earliest retry changed
	}
}
