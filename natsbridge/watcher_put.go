package natsbridge

import (
	"context"
	"log/slog"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge/internal/wait"
)

// The watcher's side of its feed: how a value read from the stream is
// placed in the watcher's queue (or channel) by its policy.

// put places it, read by the feed, in the watcher's queue by its policy,
// waiting for room under Block until ctx ends (the feed stops). A value it
// could not place is counted: handed back (durable) or dropped (with a
// log line).
func (w *Watcher[T]) put(ctx context.Context, it item[T]) error {
	if w.ch != nil {
		return w.send(ctx, it)
	}
	for {
		_, dropped, room := w.q.Put(it) // after Close (the feed is quiet then) nothing comes
		if dropped > 0 {
			w.dropped.Add(uint64(dropped))
		}
		if room == nil {
			if w.notify != nil {
				wait.Signal(w.notify)
			}
			return nil
		}
		select {
		case <-room:
		case <-ctx.Done():
			w.unplaced(1)
			return ctx.Err()
		}
	}
}

// send is put on a channel watcher. Poison messages are passed over: a
// channel carries values only.
func (w *Watcher[T]) send(ctx context.Context, it item[T]) error {
	if it.err != nil {
		return nil
	}
	for {
		w.delivered.Add(1) // before the send: a reader never counts more than Delivered
		select {
		case w.ch <- it.v:
			w.chSent++
			w.read(it)
			return nil
		default:
		}
		w.delivered.Add(^uint64(0))
		switch {
		case w.full == broadcast.DropNewest:
			w.dropped.Add(1)
			return nil
		case w.full == broadcast.DropOldest && w.chSent-uint64(len(w.ch)) >= w.chPinned:
			// At least chPinned values have left the channel, so the one
			// in front is not a prefix value: discard it.
			select {
			case <-w.ch:
				w.dropped.Add(1)
			default: // a reader made room meanwhile
			}
			continue
		case w.full == broadcast.DropOldest:
			w.dropped.Add(1) // the prefix holds the room: drop the new one
			return nil
		}
		w.delivered.Add(1)
		select {
		case w.ch <- it.v:
			w.chSent++
			w.read(it)
			return nil
		case <-ctx.Done():
			w.delivered.Add(^uint64(0))
			w.unplaced(1)
			return ctx.Err()
		}
	}
}

// unplaced counts n values the feed read and could not place before it
// stopped.
func (w *Watcher[T]) unplaced(n int) {
	if w.d != nil {
		w.handedBack.Add(uint64(n))
		return
	}
	w.dropped.Add(uint64(n))
	w.f.log.Warn("natsbridge: values read from the stream but not queued when the watcher stopped (a watcher resumed from Seq()+1 reads them)",
		slog.Int("values", n), slog.Uint64("seq", w.Seq()))
}
