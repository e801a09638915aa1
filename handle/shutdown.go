package handle

import (
	"context"
	"time"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/internal/wait"
)

// Flush returns once every value the Pool received before the call, and
// every value its source held then (a broadcast.Watcher's or
// natsbridge.Watcher's queue: see their Backlog), has its fate: handled,
// dead-lettered (stored), or abandoned by a Shutdown. An AckSource was
// told Done of those handled or dead-lettered before Flush returns (but
// for a dead letter that reached DeadLetters only as Shutdown ran out of
// time: see DeadLetters). Values published to
// a broadcaster and not yet in its watchers' queues are not held yet: call
// the broadcaster's Flush first. With a source that drops values from its
// queue (broadcast.DropOldest) Flush may wait for a value dropped: use a
// Block source, or bound it with ctx. Once the Pool stops reading (a
// Shutdown, or its source ended), it waits only for the values it
// received. It returns ctx.Err() if ctx ends first. It panics on a nil
// ctx.
func (p *Pool[T, K]) Flush(ctx context.Context) error {
	if ctx == nil {
		panic("handle: nil Context")
	}
	p.mu.Lock()
	target, ended := p.ords.next, p.readEnded
	p.mu.Unlock()
	b, ok := p.src.(interface{ Backlog() broadcast.Backlog })
	if ended || !ok {
		return p.floor.Wait(ctx, target)
	}
	// Every value that entered the source's queue is received in turn,
	// the received ones first: while the Pool reads.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(p.readOver, cancel)()
	err := p.floor.Wait(wctx, max(target, b.Backlog().Entered))
	if err == nil || ctx.Err() != nil {
		return err
	}
	// Reading ended (a Shutdown, or the source ended): the values the
	// Pool received are the last to get a fate.
	p.mu.Lock()
	target = p.ords.next
	p.mu.Unlock()
	return p.floor.Wait(ctx, target)
}

// Shutdown stops reading the source, lets the handlers in flight finish,
// and returns once they have, or once ctx ends: then their ctx ends too
// (a handler that ignores it keeps its worker until it returns, and its
// value's fate is counted then). The values not yet in a handler, and
// those whose handler fails from then on, are abandoned: counted, never
// marked done, so that a durable source hands them out again. Shutdown
// then stops the source (a durable natsbridge watcher hands its position
// over at once) and closes DeadLetters once its values are read. It
// returns nil, or ctx.Err() if ctx ended first: the values whose worker
// was still at work then get their fates as it returns, and a Flush
// called after Shutdown waits for them. It is idempotent; it
// panics on a nil ctx.
func (p *Pool[T, K]) Shutdown(ctx context.Context) error {
	if ctx == nil {
		panic("handle: nil Context")
	}
	p.shutOnce.Do(func() { p.shutErr = p.shutdown(ctx) })
	return p.shutErr
}

func (p *Pool[T, K]) shutdown(ctx context.Context) error {
	p.mu.Lock()
	p.stopped = true
	p.abandonWaitingLocked()
	p.mu.Unlock()
	p.stopRead()
	p.g.Stop()
	err := p.g.Wait(ctx)
	p.stopSource()
	// The workers have stopped putting dead letters; those queued stay
	// readable.
	now, cancel := context.WithCancel(context.Background())
	cancel()
	_ = p.dead.Shutdown(now)
	p.mu.Lock()
	p.deadShut = true
	p.settleLocked()
	p.mu.Unlock()
	return err
}

// abandonWaitingLocked gives every value not in a handler its fate:
// abandoned.
func (p *Pool[T, K]) abandonWaitingLocked() {
	drop := func(l *lane[T, K]) {
		from := 0
		if l.running {
			from = 1 // its head is in a handler: it gets its fate there
		}
		for i := from; i < l.vals.Len(); i++ {
			p.fateLocked(l.vals.At(i).ord)
			p.stats.Abandoned++
		}
		if !l.retryAt.IsZero() {
			p.stats.Backoff--
			p.stats.Waiting++ // counted below with the others
			l.retryAt = time.Time{}
		}
		p.stats.Waiting -= l.vals.Len() - from
		head := l.vals.Len() > 0 && l.running
		var kept entryOrZero[T]
		if head {
			kept.e, kept.ok = l.vals.Peek(), true
		}
		l.vals.Discard(l.vals.Len())
		if kept.ok {
			l.vals.Push(kept.e)
			return
		}
		p.failed.remove(l)
		if p.key != nil {
			delete(p.keys, l.key)
		}
	}
	for _, l := range p.keys {
		drop(l)
	}
	p.sweepIdleLocked()
	for p.ready.Len() > 0 { // lanes of unkeyed values are in no map
		if l := p.ready.Pop(); p.key == nil {
			drop(l)
		}
	}
	for _, l := range p.retry {
		if p.key == nil {
			drop(l)
		}
		l.heapIdx = -1
	}
	p.retry = p.retry[:0]
	wait.Signal(p.reader.WakeLocked())
}

// entryOrZero is an entry, if ok.
type entryOrZero[T any] struct {
	e  entry[T]
	ok bool
}

// stopSource stops the Pool's source (its Stop), and, for a source that
// waits in its Shutdown for the values it handed out to be done (a durable
// natsbridge watcher), ends that wait at once: the values without a fate
// go back to the server now, not after a takeover time.
func (p *Pool[T, K]) stopSource() {
	if s, ok := p.src.(interface {
		Shutdown(context.Context) error
	}); ok {
		now, cancel := context.WithCancel(context.Background())
		cancel()
		_ = s.Shutdown(now) // it stops the source too, bounded
		return
	}
	if s, ok := p.src.(interface{ Stop() }); ok {
		s.Stop()
	}
}

// Err returns why the Pool stopped reading its source before its
// Shutdown (the source ended or failed), or nil.
func (p *Pool[T, K]) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.readErr
}

// Stats returns a snapshot of the Pool's counters, taken at one instant.
func (p *Pool[T, K]) Stats() Stats[K] {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Keys = len(p.keys) - p.idle
	if p.key == nil {
		s.Keys = 0
	}
	var worst *lane[T, K]
	p.eachBegunLocked(func(l *lane[T, K]) {
		if l.vals.Len() > 0 && (worst == nil || l.begun < worst.begun) {
			worst = l
		}
	})
	if worst != nil {
		s.Blocked = &Blocked[K]{
			Key:      worst.key,
			Since:    worst.first,
			For:      time.Since(worst.first),
			Attempts: worst.attempts(),
			Behind:   worst.vals.Len() - 1,
		}
	}
	return s
}
