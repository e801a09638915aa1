package natsbridge

import (
	"context"
	"errors"
	"log/slog"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge/internal/lifecycle"
)

// Forward publishes every value b delivers to p, in b's order, until stop is
// called or b shuts down. It watches b with b's own options: under Block
// (b's default) nothing is lost between b and p, and a slow stream holds b
// back once p's window is full.
//
// stop(ctx) stops taking values from b, publishes those already taken, and
// returns once the forwarding goroutine has exited: nil, or ctx.Err() if
// ctx ended first (the rest is abandoned and counted in p's
// Stats().Abandoned), or ErrClosed if b was shut down before Forward.
//
// Forward starts one goroutine, ended as described. It panics if b or p
// is nil, at the call rather than in that goroutine.
func Forward[T any](b *broadcast.Broadcaster[T], p *Publisher[T]) (stop func(context.Context) error) {
	if b == nil {
		panic("natsbridge: Forward from a nil Broadcaster")
	}
	if p == nil {
		panic("natsbridge: Forward to a nil Publisher")
	}
	w, err := b.Watch()
	if err != nil {
		return func(stopCtx context.Context) error {
			mustContext(stopCtx)
			return err
		}
	}
	g := lifecycle.New()
	g.Go(func() { forward(g.Aborting(), w, p) })
	return func(stopCtx context.Context) error {
		mustContext(stopCtx)
		if g.Stop() {
			w.Stop()
		}
		return g.Shutdown(stopCtx)
	}
}

// forward is the forwarding goroutine: it publishes what w delivers until
// w ends, and counts what it cannot publish once p shut down or ctx (the
// stop's Aborting) ended.
func forward[T any](ctx context.Context, w *broadcast.Watcher[T], p *Publisher[T]) {
	var failed error
	for v := range w.All() {
		// Publish waits through what passes: a full window, the
		// connection's limits, a reconnection. What it returns otherwise
		// is p's Shutdown, the end of stop's context or a closed
		// connection: nothing more can be published.
		err := p.Publish(ctx, v)
		if err == nil || errors.Is(err, ErrCodec) || errors.Is(err, ErrTooLarge) {
			continue // a value p refused is counted by p as Invalid
		}
		failed = err
		break
	}
	if failed == nil {
		return
	}
	// p shut down, or stop's context ended: count the value that failed
	// and those still queued (a loop that breaks leaves the values it took
	// but did not yield queued).
	w.Stop()
	n := uint64(1)
	for range w.All() {
		n++
	}
	p.addAbandoned(n)
	p.logLost.warn("natsbridge: forward abandoned values", slog.Uint64("values", n), errAttr(failed))
	p.flushLogs() // this line may have been suppressed, and p may be shut down
}
