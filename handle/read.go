package handle

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/heraldgo/herald/internal/wait"
)

// read is the reader goroutine: it takes values from the source while
// the Pool has room, and hands them to the shards of their keys. From a
// broadcast.Watcher it takes, under one lock, the values queued, up to the
// room left and maxBatch (see receive), and hands each shard its part
// under one lock. A batch taken as Shutdown begins is handed on too: its
// values are counted received and abandoned, as the Pool takes no more
// values to a handler.
func (p *Pool[T, K]) read() { p.readFrom(nil) }

// readFrom is the reader's loop, begun with the rest of a receive (if
// resume is not nil) whose key function called runtime.Goexit on the
// goroutine before, or whose panic's value did as it was described (see
// keysFrom): the reader goes on on a new one. A
// source whose Next calls runtime.Goexit ends the reading, with an
// error.
func (p *Pool[T, K]) readFrom(resume func() (int, error)) {
	returned := false
	defer func() {
		if !returned && p.resume != nil {
			r := p.resume
			p.resume = nil
			p.g.Relay(func() { p.readFrom(r) })
			return
		}
		p.mu.Lock()
		if !returned && p.readErr == nil && !p.stopped.Load() {
			p.readErr = errReaderExited
		}
		p.readEnded = true
		p.mu.Unlock()
		p.endRead()
	}()
	var n int
	var err error
	if resume != nil {
		n, err = resume()
	}
	for {
		p.roomLeft -= n
		if err != nil {
			p.mu.Lock()
			if !p.stopped.Load() {
				p.readErr = err
			}
			p.mu.Unlock()
			break
		}
		room := p.waitRoom()
		if room == 0 {
			break
		}
		n, err = p.receive(room)
	}
	returned = true
}

// errReaderExited is why reading ended when code the reader called (the
// source's, a Logger, a DeadLetterSink) called runtime.Goexit.
var errReaderExited = errors.New("handle: the reader's goroutine ended in a call to runtime.Goexit (in the source, a Logger or a dead-letter store): reading ended")

// maxBatch is how many values the reader takes from its source at most
// before it hands them on.
const maxBatch = 256

// waitRoom waits until the Pool has room for a value, and returns how
// many values it has room for (at most maxBatch), or 0 once it is
// stopped. The room it found is kept (roomLeft) and counted down: it only
// grows meanwhile, so it is looked for again only when it is short.
func (p *Pool[T, K]) waitRoom() int {
	for !p.stopped.Load() {
		if p.roomLeft < maxBatch {
			p.roomLeft = p.room(p.next)
		}
		if p.roomLeft > 0 {
			p.setPaused(false)
			return min(p.roomLeft, maxBatch)
		}
		// The workers publish every fate from here on (see fateLocked);
		// those before, not yet published, are published here.
		p.rParked.Store(true)
		for _, s := range p.shards {
			s.mu.Lock()
			s.publishLocked()
			s.mu.Unlock()
		}
		if p.roomLeft = p.room(p.next); p.roomLeft > 0 {
			p.rParked.Store(false)
			continue
		}
		p.setPaused(true)
		select {
		case <-p.readerWake:
		case <-p.readCtx.Done():
		}
		p.rParked.Store(false)
	}
	return 0
}

// setPaused records whether the reader waits for room, for Stats.
func (p *Pool[T, K]) setPaused(paused bool) {
	if p.pausedR == paused {
		return
	}
	p.pausedR = paused
	p.mu.Lock()
	p.paused = paused
	if paused {
		p.pauses++
	}
	p.mu.Unlock()
}

// room returns how many values the Pool may receive, with the orders
// below next received: fewer than QueueLength less those it holds, and
// than Window less how far reading runs ahead of the oldest value without
// a fate. It may be less than that (the shards publish their fates in
// bunches), never more.
func (p *Pool[T, K]) room(next uint64) int {
	var fated uint64
	for _, s := range p.shards {
		fated += s.fated.Load()
	}
	held := int(next - fated)
	return min(p.o.QueueLength-held, p.o.Window-int(next-p.floor.Load()))
}

// wakeReader wakes the reader if it waits for room, and there is some.
func (p *Pool[T, K]) wakeReader() {
	if p.rParked.Load() && p.room(p.received.Load()) > 0 && p.rParked.CompareAndSwap(true, false) {
		wait.Signal(p.readerWake)
	}
}

// batchReader is a source that hands out what it holds, up to n values
// at once, in spite of an ended ctx (broadcast.Watcher.NextBatch).
type batchReader[T any] interface {
	NextBatch(ctx context.Context, dst []T, n int) ([]T, error)
}

// receive takes the source's next values, at most room, hands them on,
// and returns how many it took: from a batchReader the values it holds;
// from another source one value (a durable natsbridge watcher's Receive
// must not be called again once the Pool is stopping).
func (p *Pool[T, K]) receive(room int) (int, error) {
	switch {
	case p.acks != nil:
		d, err := p.acks.Receive(p.readCtx)
		if err != nil {
			return 0, err
		}
		p.accept(&d)
		p.push()
		return 1, nil
	case p.batches != nil:
		vals, err := p.takeBatch(room)
		p.batchErr = err // for a reader that goes on after a key function's runtime.Goexit
		p.acceptAll(vals, p.keyBuf[:0])
		clear(vals)
		return len(vals), err
	}
	v, err := p.src.Next(p.readCtx)
	if err != nil {
		return 0, err
	}
	p.accept(&Delivery[T]{Value: v, Attempt: 1})
	p.push()
	return 1, nil
}

// takeBatch takes from a batchReader the values it holds, at most room
// (in spite of an ended read ctx: values taken as Shutdown begins are
// counted, abandoned, rather than lost between the take and the push).
func (p *Pool[T, K]) takeBatch(room int) ([]T, error) {
	vals, err := p.batches.NextBatch(p.readCtx, p.valBuf[:0], room)
	p.valBuf = vals
	return vals, err
}

// accept buffers a value received for the shard of its key, or, if it
// has none (it could not be decoded, or the key function panicked),
// dead-letters it, after the values buffered before it are pushed.
func (p *Pool[T, K]) accept(d *Delivery[T]) {
	var k keyed[K]
	if d.Err == nil && p.key != nil {
		k = p.keyOf(d)
		p.resume = nil // no Goexit: keyOf returned
	}
	p.acceptKeyed(d, k)
}

// acceptKeyed is accept, d's key k found.
func (p *Pool[T, K]) acceptKeyed(d *Delivery[T], k keyed[K]) {
	if d.Err != nil || k.err != nil {
		p.push()
		p.poison(d, k)
		return
	}
	p.buffer(entry[T]{v: d.Value, seq: d.Seq, ord: p.next, turn: d.Turn, before: max(d.Attempt, 1) - 1}, k)
}

// acceptAll accepts vals, a batch of a batchReader, keys holding the keys
// of its first values, and pushes them: as accept does, with one deferred
// recover for the batch's keys rather than one a value (see keysFrom).
func (p *Pool[T, K]) acceptAll(vals []T, keys []keyed[K]) {
	if p.key != nil {
		for len(keys) < len(vals) {
			keys = p.keysFrom(vals, keys)
		}
		p.resume = nil // no Goexit: keysFrom returned
		p.keyBuf = keys
	}
	for i := range vals {
		var k keyed[K]
		if p.key != nil {
			k = keys[i]
		}
		if k.err != nil {
			p.push()
			p.poison(&Delivery[T]{Value: vals[i], Attempt: 1}, k)
			continue
		}
		p.buffer(entry[T]{v: vals[i], ord: p.next}, k)
	}
	p.push()
	clear(keys)
}

// buffer appends e, of key k, to the buffer of its key's shard, for push.
func (p *Pool[T, K]) buffer(e entry[T], k keyed[K]) {
	s := p.next & p.mask // no key: spread
	if p.key != nil {
		s = k.h & p.mask
	}
	p.bufs[s] = append(p.bufs[s], placing[T, K]{e: e, k: k.k, h: k.h})
	p.next++
}

// push hands each shard the values buffered for it, under its lock, and
// wakes a worker (the hand-off rule wakes more). It takes the locks it
// finds free first, then waits for the others: a reader that waits on a
// lock gives up its processor, and once woken may wait long for one
// again, behind the workers it fed, while they run out of values
// (BenchmarkEmptyHandler: 7% of a value's cost with 16 workers on
// 2 cores).
func (p *Pool[T, K]) push() {
	p.taken.Store(p.next)
	first := -1
	var n fateNote
	for _, wait := range [...]bool{false, true} {
		for i, b := range p.bufs {
			if len(b) == 0 {
				continue
			}
			s := p.shards[i]
			if wait {
				s.mu.Lock()
			} else if !s.mu.TryLock() {
				continue
			}
			var fn fateNote
			p.bufs[i], fn = s.acceptLocked(p, b) // emptied: not handed twice
			s.mu.Unlock()
			n = n.add(fn)
			if first < 0 {
				first = i
			}
		}
	}
	if first < 0 {
		return
	}
	p.publishReceived()
	p.afterFate(n)
	p.wakeOne(first)
}

// publishReceived publishes the orders received (every one below
// p.next was handed to its shard), and moves the Pool's floor if it was
// held by what was received.
func (p *Pool[T, K]) publishReceived() {
	if old := p.received.Swap(p.next); p.floor.Load() >= old {
		p.raiseFloor()
	}
}

// acceptLocked takes in b, values received for the shard: into its
// inbox, to be placed behind their keys by a worker (see placeLocked), or,
// once the Pool is stopped, abandoned (a source's queued value wins over
// the ended read), since no worker takes a value any more.
//
// It returns the buffer the reader fills next: b itself, emptied, or, if
// the inbox was empty, the inbox's buffer, as b becomes the inbox (no
// copy).
func (s *shard[T, K]) acceptLocked(p *Pool[T, K], b []placing[T, K]) ([]placing[T, K], fateNote) {
	for i := range b {
		b[i].e.idx = s.rec.add(b[i].e.ord)
	}
	s.stats.Received += uint64(len(b))
	s.stats.Waiting += len(b)
	if p.stopped.Load() {
		return b[:0], s.abandonLocked(p, b)
	}
	if s.floor.Load() == noOrd {
		s.floor.Store(b[0].e.ord)
	}
	next := b[:0]
	if len(s.inbox) == 0 {
		next, s.inbox = s.inbox, b
	} else {
		s.inbox = append(s.inbox, b...)
		clear(b)
	}
	s.noteLocked()
	return next, fateNote{}
}

// poison dead-letters a value received that has no key (d.Err or k.err
// says why), in shard 0, or abandons it once the Pool is stopped.
func (p *Pool[T, K]) poison(d *Delivery[T], k keyed[K]) {
	e := entry[T]{v: d.Value, seq: d.Seq, ord: p.next, turn: d.Turn, before: max(d.Attempt, 1) - 1}
	p.next++
	p.taken.Store(p.next)
	s := p.shards[0]
	s.mu.Lock()
	e.idx = s.rec.add(e.ord)
	s.stats.Received++
	if p.stopped.Load() {
		s.stats.Abandoned++
		n := s.fateLocked(p, &e)
		s.mu.Unlock()
		p.publishReceived()
		p.afterFate(n)
		return
	}
	failed := d.Err
	if d.Err != nil {
		s.stats.Poisoned++
	} else {
		failed = k.err
	}
	if s.floor.Load() == noOrd {
		s.floor.Store(e.ord)
	}
	s.stats.InFlight++
	s.mu.Unlock()
	p.publishReceived()
	p.giveUpAtOnce(s, k.k, &e, failed)
}

// warnMixed logs, in bursts, a key that joined values of two partitions
// (n such values, this key the last).
func (p *Pool[T, K]) warnMixed(k K, n int) {
	if c, due := p.logMixed.Add(time.Now(), uint64(n)); due {
		p.o.Logger.Warn("handle: the key function does not refine the source's partition key: a key's values come from two partitions, whose order no one keeps, and may be handled by two members at once; key by the partition key, or refine it (natsbridge.Refine)",
			slog.Any("key", k), slog.Uint64("count", c))
	}
}
