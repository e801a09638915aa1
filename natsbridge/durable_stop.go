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

// afterStop runs at the end of the watcher's Stop, once its feed has
// exited and its queue is handed back: it hands the position over now if
// no value is outstanding, and otherwise when the last is done (doneSeq)
// or after the takeover time, whichever comes first.
func (d *durable) afterStop(w interface{ finish() }, log *slog.Logger) {
	if n, _ := d.acks.outstanding(); n == 0 {
		w.finish()
		return
	}
	// Acknowledge what is done now: the process may end before the last
	// value is (the values after the floor come again then).
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
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
		w.finish()
	}
}

// arm bounds the hand-over of the stopped watcher w by the takeover time,
// once: a patient hand-over (a partition moving to another member of the
// group) is bounded so when its member stops.
func (d *durable) arm(w interface{ finish() }) {
	d.timerMu.Lock()
	defer d.timerMu.Unlock()
	if d.timer == nil {
		d.timer = time.AfterFunc(d.takeover, w.finish)
	}
}

// finish hands a stopped durable watcher's position over, once: it
// acknowledges the values done (waiting for the server's answer), writes
// in the position's record how far this reader handed values out, puts
// the consumer back at its acknowledged position (what was fetched and not
// handed out, or not done, is delivered again) and unpins this reader, so
// that a standby reads on at once. Values outstanding still then are not
// acknowledged: they come again to the next reader. Each server call is
// bounded by deleteTimeout.
func (w *Watcher[T]) finish() {
	d := w.d
	d.finishOnce.Do(func() {
		d.timerMu.Lock()
		if d.timer != nil {
			d.timer.Stop()
		}
		d.timerMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
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
		if d.pin != "" && w.t.js.Conn().IsConnected() {
			_ = w.f.resetTo(ctx)
			_ = w.t.stream.UnpinConsumer(ctx, d.name, durableGroup)
		}
		close(d.finished)
		w.t.forget(w)
	})
}
