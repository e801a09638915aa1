package handle

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// keepUnsure keeps the value e of shard s, counted in flight, in p.unsure
// until its dead letter, published after DeadLetters had queued before,
// is known queued or dropped.
func (p *Pool[T, K]) keepUnsure(s *shard[T, K], e *entry[T], before uint64) {
	p.mu.Lock()
	p.unsure = append(p.unsure, unsureLetter[T, K]{s: s, e: *e, before: before})
	p.settleLocked()
	p.mu.Unlock()
}

// settleLocked, once dead has shut down, gives the values in unsure their
// fate from what DeadLetters queued: dead-lettered if their letter is in
// its queue, abandoned if not (dropped, or the watcher was stopped). There
// is at most one: a letter is unsure only once Shutdown ran out of time,
// and from then on no Publish succeeds; so it is the last one published,
// queued if DeadLetters queued more than before it. A worker whose letter
// was still unsure when the Pool's Shutdown returned settles its own.
func (p *Pool[T, K]) settleLocked() {
	if !p.deadShut {
		return
	}
	queued := p.deadW.Delivered()
	for _, u := range p.unsure {
		count := &u.s.stats.Abandoned
		if queued > u.before {
			count = &u.s.stats.DeadLettered
		}
		u.s.mu.Lock()
		n := u.s.countLocked(p, &u.e, count)
		u.s.mu.Unlock()
		p.afterFate(n)
	}
	clear(p.unsure)
	p.unsure = p.unsure[:0]
}

// storing is what became of a dead letter handed on.
type storing int

const (
	notStored   storing = iota // not handed on: the caller tries again later
	stored                     // kept by the source, or queued in DeadLetters
	unconfirmed                // published to DeadLetters, not seen queued there (see unsure)
)

// giveUp hands a dead letter to the source, if it keeps them, or to the
// Pool's dead-letter broadcaster, and reports what became of it, and, for
// an unconfirmed one, how many dead letters DeadLetters had queued before
// it. A failure to store it is logged; the caller tries again later.
func (p *Pool[T, K]) giveUp(k K, e *entry[T], f Failure) (storing, uint64) {
	if n, due := p.logDead.Add(time.Now(), 1); due {
		p.o.Logger.Warn("handle: value dead-lettered", slog.Uint64("seq", e.seq), slog.Int("attempts", f.Attempts),
			slog.String("error", errorType(f.Err)), slog.Uint64("count", n))
	}
	ctx := p.g.Aborting()
	if p.sink != nil && e.seq != 0 {
		err := p.sink.DeadLetter(ctx, e.seq, f)
		if err == nil {
			return stored, 0
		}
		if !errors.Is(err, ErrNoDeadLetterSink) {
			p.o.Logger.Warn("handle: dead letter not stored: trying again", slog.Uint64("seq", e.seq), slog.String("error", err.Error()))
			return notStored, 0
		}
	}
	// One at a time: Flush waits for every value published before it, so
	// a dead letter published by another worker after this one and
	// waiting for room would make this one's Flush fail, counted
	// abandoned though it is in the queue.
	select {
	case p.deadTurn <- struct{}{}:
		defer func() { <-p.deadTurn }()
	case <-ctx.Done():
		return notStored, 0
	}
	before := p.deadW.Delivered()
	if err := p.dead.Publish(ctx, DeadLetter[T, K]{Key: k, Value: e.v, Seq: e.seq, Failure: f}); err != nil {
		return notStored, 0
	}
	// Stored once it is in the watcher's queue. Published, it can no
	// longer be withdrawn: if the Pool's Shutdown runs out of time first,
	// dead's Shutdown queues it or drops it (see settleLocked).
	if p.dead.Flush(ctx) != nil {
		return unconfirmed, before
	}
	if p.deadW.Delivered() == before { // DeadLetters was stopped: it went nowhere
		if n, due := p.logStopped.Add(time.Now(), 1); due {
			p.o.Logger.Warn("handle: dead letter not stored: Pool.DeadLetters was stopped; its key waits until Shutdown",
				slog.Uint64("seq", e.seq), slog.Uint64("count", n))
		}
		return notStored, 0
	}
	return stored, 0
}

// errorType names an error by its Go type: its text may quote the value.
func errorType(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprintf("%T", err)
}

// pause waits before the reader's next of tries to store a dead letter,
// and reports false once the Pool's Shutdown has begun: the reader holds
// no handler to wait for, and every value behind it waits for it.
func (p *Pool[T, K]) pause(try int) bool {
	t := time.NewTimer(p.backoff(try))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.g.Stopping().Done():
		return false
	}
}
