package handle

import (
	"context"
	"time"

	"github.com/heraldgo/herald/broadcast"
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
	target, ended := p.taken.Load(), p.readEnded
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
	err := p.floor.Wait(wctx, max(target, b.Backlog().Entered-p.backlogBase))
	if err == nil || ctx.Err() != nil {
		return err
	}
	// Reading ended (a Shutdown, or the source ended): the values the
	// Pool received are the last to get a fate.
	return p.floor.Wait(ctx, p.taken.Load())
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
// called after Shutdown waits for them. It is idempotent: a Shutdown
// called while another runs waits for it, or for its own ctx (then
// returns ctx.Err(); the first one's ctx bounds the handlers). It panics
// on a nil ctx.
func (p *Pool[T, K]) Shutdown(ctx context.Context) error {
	if ctx == nil {
		panic("handle: nil Context")
	}
	if p.shutBegun.CompareAndSwap(false, true) {
		p.shutErr = p.shutdown(ctx)
		close(p.shutDone)
		return p.shutErr
	}
	select { // another runs it: wait for it, or for this ctx
	case <-p.shutDone:
		return p.shutErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Pool[T, K]) shutdown(ctx context.Context) error {
	p.mu.Lock()
	p.lockShards()
	p.stopped.Store(true)
	var n fateNote
	for _, s := range p.shards {
		n = n.add(s.abandonWaitingLocked(p))
	}
	p.unlockShards()
	p.mu.Unlock()
	p.afterFate(n)
	p.stopRead()
	p.g.Stop()
	p.wakeAll()
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

// lockShards locks every shard, in order; unlockShards unlocks them.
func (p *Pool[T, K]) lockShards() {
	for _, s := range p.shards {
		s.mu.Lock()
	}
}

func (p *Pool[T, K]) unlockShards() {
	for _, s := range p.shards {
		s.mu.Unlock()
	}
}

// abandonWaitingLocked gives every value of the shard not in a handler
// its fate: abandoned.
func (s *shard[T, K]) abandonWaitingLocked(p *Pool[T, K]) fateNote {
	n := s.abandonLocked(p, s.inbox)
	s.inbox = s.inbox[:0]
	s.keys.each(func(l *lane[T, K]) { n = n.add(s.dropLocked(p, l)) })
	s.sweepIdleLocked(p)    // the lanes dropped whole
	for s.ready.Len() > 0 { // lanes in no table (no key, or a NaN)
		if l := s.ready.Pop(); !l.mapped {
			n = n.add(s.dropLocked(p, l))
		}
	}
	for _, l := range s.retry {
		if !l.mapped {
			n = n.add(s.dropLocked(p, l))
		}
		l.heapIdx = -1
	}
	clear(s.retry)
	s.retry = s.retry[:0]
	s.noteLocked()
	return n
}

// abandonLocked gives the values of b, received for the shard and
// counted Waiting (its inbox, or a batch the reader hands it once the
// Pool is stopped), their fate: abandoned. It empties b.
func (s *shard[T, K]) abandonLocked(p *Pool[T, K], b []placing[T, K]) fateNote {
	var n fateNote
	for i := range b {
		s.stats.Abandoned++
		s.stats.Waiting--
		n = n.add(s.fateLocked(p, &b[i].e))
	}
	clear(b)
	return n
}

// dropLocked abandons the values of lane l, but for its head if it is in
// a handler: it gets its fate there.
func (s *shard[T, K]) dropLocked(p *Pool[T, K], l *lane[T, K]) fateNote {
	from := 0
	if l.running {
		from = 1
	}
	var n fateNote
	for i := from; i < l.vals.Len(); i++ {
		e := l.vals.At(i)
		n = n.add(s.fateLocked(p, &e))
		s.stats.Abandoned++
	}
	if !l.retryAt.IsZero() {
		s.stats.Backoff--
		s.stats.Waiting++ // counted below with the others
		l.retryAt = time.Time{}
	}
	s.stats.Waiting -= l.vals.Len() - from
	l.vals.Truncate(from)
	if from > 0 {
		return n
	}
	s.failed.remove(l) // idle now: swept from the keys by the caller
	return n
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

// Stats returns a snapshot of the Pool's counters, taken at one instant
// (with every shard locked).
func (p *Pool[T, K]) Stats() Stats[K] {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lockShards()
	defer p.unlockShards()
	var s Stats[K]
	var worst *lane[T, K]
	for _, sh := range p.shards {
		if len(sh.inbox) > 0 {
			sh.placeLocked(p) // its keys counted in Keys
		}
		s.add(&sh.stats)
		if p.key != nil {
			s.Keys += sh.keys.n - sh.idle
		}
		sh.eachBegunLocked(func(l *lane[T, K]) {
			if l.vals.Len() > 0 && (worst == nil || l.since().before(worst.since())) {
				worst = l
			}
		})
	}
	s.Paused, s.Pauses = p.paused, p.pauses
	if worst != nil {
		s.Blocked = &Blocked[K]{
			Key:      worst.key,
			Since:    time.Unix(0, worst.first),
			For:      time.Since(time.Unix(0, worst.first)),
			Attempts: worst.attempts(),
			Behind:   worst.vals.Len() - 1,
		}
	}
	return s
}

// add adds a shard's counts to s.
func (s *Stats[K]) add(o *Stats[K]) {
	s.Received += o.Received
	s.Handled += o.Handled
	s.DeadLettered += o.DeadLettered
	s.Poisoned += o.Poisoned
	s.Mixed += o.Mixed
	s.InFlight += o.InFlight
	s.Waiting += o.Waiting
	s.Backoff += o.Backoff
	s.Abandoned += o.Abandoned
	s.Voided += o.Voided
	s.Retries += o.Retries
	s.Panics += o.Panics
}
