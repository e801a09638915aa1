package handle

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// read is the reader goroutine: it takes values from the source while
// the Pool has room, and places them behind their keys. From a
// broadcast.Watcher it takes, under one lock, the values queued, up to the
// room left and maxBatch (see receive), and places them under one lock. A
// batch taken as Shutdown begins is placed too: its values are counted
// received and abandoned, as the Pool takes no more values to a handler.
func (p *Pool[T, K]) read() {
	defer func() {
		p.mu.Lock()
		p.readEnded = true
		p.mu.Unlock()
		p.endRead()
	}()
	p.mu.Lock()
	room := p.waitRoomLocked()
	p.mu.Unlock()
	batch := make([]Delivery[T], 0, min(maxBatch, p.o.QueueLength))
	for room > 0 {
		var err error
		if batch, err = p.receive(batch, room); err != nil {
			p.mu.Lock()
			if !p.stopped {
				p.readErr = err
			}
			p.mu.Unlock()
			return
		}
		room = p.accept(batch)
		clear(batch)
		batch = batch[:0]
	}
}

// maxBatch is how many values the reader takes from its source at most
// before it places them.
const maxBatch = 64

// waitRoomLocked waits until the Pool has room for a value, and returns
// how many values it has room for (at most maxBatch), or 0 once it is
// stopped.
func (p *Pool[T, K]) waitRoomLocked() int {
	for !p.stopped && p.full() {
		if !p.stats.Paused {
			p.stats.Paused = true
			p.stats.Pauses++
		}
		c := p.reader.ParkLocked()
		p.mu.Unlock()
		select {
		case <-c:
		case <-p.readCtx.Done():
		}
		p.mu.Lock()
		p.reader.UnparkLocked()
	}
	p.stats.Paused = false
	if p.stopped {
		return 0
	}
	return min(p.roomLocked(), maxBatch)
}

// full reports whether the Pool holds QueueLength values, or reading runs
// Window values ahead of the oldest without a fate.
func (p *Pool[T, K]) full() bool { return p.roomLocked() <= 0 }

// roomLocked returns how many values the Pool may receive: fewer than
// QueueLength less those it holds, and than Window less how far reading
// runs ahead of the oldest value without a fate.
func (p *Pool[T, K]) roomLocked() int {
	held := p.stats.InFlight + p.stats.Waiting + p.stats.Backoff
	return min(p.o.QueueLength-held, p.o.Window-p.ords.span())
}

// batchReader is a source that hands out what it holds, up to n values
// at once, in spite of an ended ctx (broadcast.Watcher.NextBatch).
type batchReader[T any] interface {
	NextBatch(ctx context.Context, dst []T, n int) ([]T, error)
}

// receive appends to batch the source's next values, at most room: from a
// batchReader the values it holds; from another source one value (a
// durable natsbridge watcher's Receive must not be called again once the
// Pool is stopping). On an error it appends nothing.
func (p *Pool[T, K]) receive(batch []Delivery[T], room int) ([]Delivery[T], error) {
	switch {
	case p.acks != nil:
		d, err := p.acks.Receive(p.readCtx)
		if err != nil {
			return batch, err
		}
		return append(batch, d), nil
	case p.batches != nil:
		vals, err := p.batches.NextBatch(p.readCtx, p.valBuf[:0], room)
		for _, v := range vals {
			batch = append(batch, Delivery[T]{Value: v, Attempt: 1})
		}
		clear(vals)
		p.valBuf = vals
		return batch, err
	}
	v, err := p.src.Next(p.readCtx)
	if err != nil {
		return batch, err
	}
	return append(batch, Delivery[T]{Value: v, Attempt: 1}), nil
}

// accept places the values received behind their keys, or, those that
// have none (they could not be decoded, or the key function panicked),
// dead-letters; then it waits for room for the next values, and returns
// how many it has room for, or 0 once the Pool is stopped.
func (p *Pool[T, K]) accept(batch []Delivery[T]) int {
	keys := p.keysOf(batch)
	p.mu.Lock()
	for i := range batch {
		p.acceptLocked(&batch[i], keys[i])
	}
	room := p.waitRoomLocked()
	p.mu.Unlock()
	clear(keys)
	return room
}

// acceptLocked places a value received behind its key k, or dead-letters
// it if it has no key (see keyOf), or abandons it once the Pool is
// stopped.
func (p *Pool[T, K]) acceptLocked(d *Delivery[T], k keyed[K]) {
	e := entry[T]{v: d.Value, seq: d.Seq, ord: p.ords.add(), turn: d.Turn, before: max(d.Attempt, 1) - 1}
	p.stats.Received++
	switch {
	case p.stopped:
		// Handed out as Shutdown began (a source's queued value wins over
		// the ended read): abandoned with the values that waited, since
		// no worker takes a value any more.
		p.stats.Abandoned++
		p.fateLocked(e.ord)
	case d.Err != nil || k.err != nil:
		failed := d.Err
		if d.Err != nil {
			p.stats.Poisoned++
		} else {
			failed = k.err
		}
		p.stats.InFlight++
		p.mu.Unlock()
		p.giveUpAtOnce(k.k, e, failed)
		p.mu.Lock()
	default:
		l := p.laneLocked(k.k)
		mixed := p.partitionLocked(l, d.Seq)
		l.vals.Push(e)
		p.stats.Waiting++
		if l.vals.Len() == 1 && !l.running && l.retryAt.IsZero() {
			p.readyLocked(l)
		}
		if mixed {
			p.mu.Unlock()
			p.warnMixed(k.k)
			p.mu.Lock()
		}
	}
}

// keyed is a value's key, or why it has none.
type keyed[K comparable] struct {
	k   K
	err error
}

// partitionLocked notes, for a PartitionedSource, the partition of the
// value seq about to join lane l, and reports whether the value before it
// in l came from another partition: a key that does not refine the
// partition key.
func (p *Pool[T, K]) partitionLocked(l *lane[T, K], seq uint64) bool {
	if p.parts == nil {
		return false
	}
	part, prev := p.parts.PartitionOf(seq), l.part
	l.part = part
	if l.vals.Len() == 0 || prev == part {
		return false
	}
	p.stats.Mixed++
	return true
}

// warnMixed logs, in bursts, a key that joined values of two partitions.
func (p *Pool[T, K]) warnMixed(k K) {
	if n, due := p.logMixed.Add(time.Now(), 1); due {
		p.o.Logger.Warn("handle: the key function does not refine the source's partition key: a key's values come from two partitions, whose order no one keeps, and may be handled by two members at once; key by the partition key, or refine it (natsbridge.Refine)",
			slog.Any("key", k), slog.Uint64("count", n))
	}
}

// keysOf returns the keys of the values of batch that could be decoded,
// in a slice the reader reuses.
func (p *Pool[T, K]) keysOf(batch []Delivery[T]) []keyed[K] {
	keys := p.keyBuf[:0]
	for i := range batch {
		var k keyed[K]
		if batch[i].Err == nil && p.key != nil {
			k.k, k.err = p.keyOf(batch[i].Value)
		}
		keys = append(keys, k)
	}
	p.keyBuf = keys
	return keys
}

// keyOf returns v's key, or the panic of the key function as an error.
func (p *Pool[T, K]) keyOf(v T) (k K, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handle: key function panicked: %v", r)
		}
	}()
	return p.key(v), nil
}
