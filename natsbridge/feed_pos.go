package natsbridge

import (
	"context"
	"errors"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge/internal/wait"
)

// Where a feed stands: the sequences it took and handled, the gaps it
// counted on the way, and the calls that wait until it has handled a
// sequence (Watcher.Flush). The position is a wait.Counter: it ends with
// the feed, so that a waiter whose sequence the feed never reached
// returns the feed's end.

// advance records that every sequence up to seq was handled and releases
// the calls that waited for it; past a tail that settle counted as gaps
// while the feed held a value, once that value is handled.
func (f *feed[T]) advance(seq uint64) {
	f.pos.Advance(seq)
	if t := f.tail.Load(); t != nil && seq+1 >= t.from {
		f.pos.Advance(t.to)
	}
}

// span is a run of sequences.
type span struct{ from, to uint64 }

// waitPos returns once the feed has handled sequence target (placed its
// value with out, or counted it as a gap or a poison message), or with
// ErrClosed (or the feed's error) if the feed ended first, or ctx.Err().
func (f *feed[T]) waitPos(ctx context.Context, target uint64) error {
	err := f.pos.Wait(ctx, target)
	if errors.Is(err, wait.ErrEnded) {
		return f.endErr()
	}
	return err
}

// waitPosFor is waitPos bounded by one heartbeat: it reports false, with
// no error, if the feed has not handled target by then.
func (f *feed[T]) waitPosFor(ctx context.Context, target uint64) (bool, error) {
	short, cancel := context.WithTimeout(ctx, f.t.heartbeat)
	defer cancel()
	err := f.waitPos(short, target)
	if err != nil && err == short.Err() && ctx.Err() == nil {
		return false, nil
	}
	return err == nil, err
}

// settle counts as gaps the sequences from next to last, unless the feed
// has taken a later one. The caller knows that the stream holds none of
// them: values removed from its tail before the feed read them, which no
// later message would reveal until one is stored.
func (f *feed[T]) settle(last uint64) {
	for {
		n := f.next.Load()
		if n > last {
			return // the feed took a later value and counted the gap itself
		}
		if f.next.CompareAndSwap(n, last+1) {
			f.countGaps(n, last)
			// The feed may hold the value before n, taken and not yet
			// placed: the position passes the tail once it is.
			f.tail.Store(&span{n, last})
			if f.pos.Load()+1 >= n {
				f.pos.Advance(last)
			}
			return
		}
	}
}

// countGaps counts the sequences from..to as removed before they were read.
func (f *feed[T]) countGaps(from, to uint64) {
	n := to - from + 1
	f.gaps.Add(n)
	f.t.gaps.Add(n)
	f.logGap.warn("natsbridge: values removed from the stream before they were read",
		slog.Uint64("from", from), slog.Uint64("to", to))
}

// catchUp returns once the feed has handled every value the stream holds
// when it is called: it waits for the last of them, then counts what
// follows it up to the stream's last sequence (values removed from the
// tail) as gaps. While it waits it asks the server again every heartbeat,
// so that values removed meanwhile (a purge, MaxAge) are counted as gaps
// rather than waited for: no message would ever carry their sequences (a
// server it cannot reach then is asked again a heartbeat later). It
// returns ctx.Err() if ctx ends first, and ErrClosed (or the feed's error)
// if the feed ended first.
func (f *feed[T]) catchUp(ctx context.Context) error {
	info, err := f.t.streamState(ctx)
	if err != nil {
		return err
	}
	last := info.State.LastSeq
	held, err := f.heldUpTo(ctx, info, last)
	if err != nil {
		return err
	}
	for {
		if f.pos.Load() >= last {
			return nil
		}
		done, err := f.waitPosFor(ctx, held)
		if err != nil {
			return err
		}
		if !done {
			// Still waiting a heartbeat later: look at the stream again,
			// in case what was awaited has been removed.
			if held, err = f.heldAgain(ctx, last, held); err != nil {
				return err
			}
			continue
		}
		if held == last {
			return nil
		}
		return f.settleTail(ctx, last)
	}
}

// heldAgain is heldNow for catchUp, which waits for held: the stream's
// deletion or the end of ctx is an error; any other error leaves held as
// it was, to wait as before.
func (f *feed[T]) heldAgain(ctx context.Context, last, held uint64) (uint64, error) {
	h, err := f.heldNow(ctx, last)
	switch {
	case ctx.Err() != nil:
		return 0, ctx.Err()
	case errors.Is(err, ErrStreamGone):
		return 0, err
	case err == nil:
		return h, nil
	}
	return held, nil
}

// settleTail counts what follows the last value the stream holds, up to
// last, as gaps, once the feed has handled that value, and returns when
// the feed stands at last.
func (f *feed[T]) settleTail(ctx context.Context, last uint64) error {
	select {
	case <-f.g.Exited():
		return f.endErr() // a stopped feed counts nothing more
	default:
	}
	f.settle(last)
	// If the feed took a later value meanwhile, it counts the gap and
	// moves pos past last itself, at once.
	return f.waitPos(ctx, last)
}

// heldUpTo returns the sequence of the last message the stream, described
// by info, holds up to last, or last itself if it holds a later one (the
// feed counts the removed values before it as it takes it, and so passes
// last), or 0 if it holds none. The stream's last sequence stays when the
// message that carried it is removed (a purge, a deletion, a limit).
func (f *feed[T]) heldUpTo(ctx context.Context, info *jetstream.StreamInfo, last uint64) (uint64, error) {
	if info.State.Msgs == 0 {
		return 0, nil
	}
	held, err := f.t.lastHeld(ctx)
	if err != nil {
		return 0, err
	}
	return min(held, last), nil
}

// heldNow is heldUpTo for the stream as the server describes it now.
func (f *feed[T]) heldNow(ctx context.Context, last uint64) (uint64, error) {
	info, err := f.t.streamState(ctx)
	if err != nil {
		return 0, err
	}
	return f.heldUpTo(ctx, info, last)
}
