package natsbridge

import (
	"context"
	"log/slog"
	"time"
)

// The end of a durable watcher: it hands what it holds back to the
// server, acknowledges what its application is done with, and hands its
// position over, once its application is done with every value it was
// given (or the bound on that wait has passed).

// finisher hands a stopped watcher's position over: finish, when its
// takeover time has passed; finishWithin, its server calls bounded by a
// context.
type finisher interface {
	finish()
	finishWithin(context.Context)
}

// afterStop runs at the end of the watcher's Stop, once its feed has
// exited and its queue is handed back: it hands the position over now if
// no value is outstanding, and otherwise when the last is done (doneSeq)
// or after the takeover time, whichever comes first.
func (d *durable) afterStop(end context.Context, w finisher, log *slog.Logger) {
	d.ending.Store(true)
	if n, _ := d.acks.outstanding(); n == 0 {
		w.finishWithin(end)
		return
	}
	// Acknowledge what is done now: the process may end before the last
	// value is (the values after the floor come again then).
	ctx, cancel := context.WithTimeout(end, deleteTimeout)
	if floor, err := d.acks.finalAck(ctx); err != nil {
		log.Warn("natsbridge: durable position not saved at Stop: the values after it come again", slog.Uint64("seq", floor), errAttr(err))
	}
	cancel()
	if !d.patient.Load() {
		d.arm(w)
	}
	// The last value may have been done meanwhile, before the timer was
	// set: nothing else would hand over then.
	if n, _ := d.acks.outstanding(); n == 0 {
		w.finishWithin(end)
	}
}

// arm bounds the hand-over of the stopped watcher w by the takeover time,
// once: a patient hand-over (a partition moving to another member of the
// group) is bounded so when its member stops.
func (d *durable) arm(w finisher) {
	d.timerMu.Lock()
	defer d.timerMu.Unlock()
	if d.timer == nil {
		d.timer = time.AfterFunc(d.takeover, w.finish)
	}
}

// handOverGrace is how long the server calls that end a watcher or a
// member may take after the ctx of its Shutdown ended (see endCtx): enough
// for a hand-over on a live connection, short enough that a Shutdown
// returns soon after its ctx when the server is gone.
const handOverGrace = 250 * time.Millisecond

// endCtx returns the context that bounds the server calls of a Shutdown
// bounded by ctx: it ends handOverGrace after ctx ends, so that the
// hand-over still gets its few calls when ctx ended first (the values not
// done come again, counted), and the Shutdown returns within
// handOverGrace of its ctx whatever the server does. Each call is bounded
// by deleteTimeout too.
//
// A Shutdown that ends many (a topic's, a partitioned topic's) passes its
// own down in ctx (withEnd), so that they share one grace.
func endCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if end, ok := ctx.Value(endKey{}).(context.Context); ok {
		return end, func() {}
	}
	end, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(handOverGrace, cancel) })
	return end, func() {
		stop()
		cancel() // a grace timer still running cancels it again, to no effect
	}
}

// endKey is the key of the end context a Shutdown passes down in its ctx.
type endKey struct{}

// withEnd returns ctx carrying the end context of endCtx(ctx), for the
// Shutdowns a Shutdown calls, and the function that releases it.
func withEnd(ctx context.Context) (context.Context, context.CancelFunc) {
	end, cancel := endCtx(ctx)
	return context.WithValue(ctx, endKey{}, end), cancel
}

// finish hands a stopped durable watcher's position over, once: it
// acknowledges the values done (waiting for the server's answer), writes
// in the position's record how far this reader handed values out, and,
// if the server still serves this reader, puts the consumer back at its
// acknowledged position (what was fetched and not handed out, or not
// done, is delivered again) and unpins this reader, so that a standby
// reads on at once. Values outstanding still then are not
// acknowledged: they come again to the next reader. Each server call is
// bounded by deleteTimeout.
func (w *Watcher[T]) finish() { w.finishWithin(context.Background()) }

// finishWithin is finish, its server calls bounded by end too (see
// endCtx).
func (w *Watcher[T]) finishWithin(end context.Context) {
	d := w.d
	d.finishOnce.Do(func() {
		d.timerMu.Lock()
		if d.timer != nil {
			d.timer.Stop()
		}
		d.timerMu.Unlock()
		ctx, cancel := context.WithTimeout(end, deleteTimeout)
		defer cancel()
		if n, _ := d.acks.outstanding(); n > 0 {
			w.f.log.Warn("natsbridge: durable watcher handed over with values its application was not done with: they come again to the next reader",
				slog.Int("values", n))
		}
		if floor, err := d.acks.finalAck(ctx); err != nil {
			w.f.log.Warn("natsbridge: durable position not saved at Stop: the values after it come again", slog.Uint64("seq", floor), errAttr(err))
		}
		d.keep.stop()
		d.keep.release(ctx, d.acks.top())
		w.handBack(ctx, d.pin)
		close(d.finished)
		w.t.forget(w)
	})
}

// handBack puts the consumer back at its acknowledged position and unpins
// it, so that a standby reads on at once, if the server still serves this
// reader under pin. A reset or an unpin lands on whoever holds the turn:
// another reader's would lose it its turn, and its acknowledgements (the
// server drops those at or past the position a reset moved back), and the
// reader after it would read again what it had done. A reader that lost
// its turn without knowing it (its lease ran out and it gave the turn up,
// or the server served another when it went silent) holds a pin the
// server no longer serves.
func (w *Watcher[T]) handBack(ctx context.Context, pin string) {
	if pin == "" || !w.t.js.Conn().IsConnected() {
		return
	}
	if ok, _ := w.t.servesPin(ctx, w.d.name, pin); !ok {
		return
	}
	_, _ = w.f.resetTo(ctx)
	_ = w.t.stream.UnpinConsumer(ctx, w.d.name, durableGroup)
}
