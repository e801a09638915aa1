package natsbridge

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/heraldgo/herald/broadcast"
)

// mirror is what a Topic keeps of a Mirror: the feed and its broadcaster.
type mirror[T any] struct {
	t *Topic[T]
	f *feed[T]
	b *broadcast.Broadcaster[T]
}

// Mirror returns a local broadcast.Broadcaster, configured by o, fed with
// the values the topic stores after Mirror returns, in stream order, by one
// consumer: any number of local watchers cost one read of the stream. The
// broadcaster's own rules hold locally: a local watcher receives the values
// fed after its Watch call; under Block a full local watcher holds back the
// feed, which stops asking the server for messages (the stream keeps the
// backlog); DropNewest and DropOldest drop and count locally. Values lost to
// retention before the feed read them are counted in the topic's Stats.
//
// Mirror starts two goroutines: the feed, and one that waits for the
// broadcaster's Shutdown to begin and then stops the feed at once, which
// the feed ends once it stops reading. Shut the broadcaster down to end
// them. If the stream is deleted, the feed shuts the broadcaster down
// itself: local watchers still receive every value queued, then close.
// Topic.Shutdown ends the feed and shuts the broadcaster down.
//
// Mirror returns ErrStreamGone if the stream was deleted, ErrClosed after
// the topic's Shutdown has begun, and an error for an invalid o; ctx bounds
// the calls to the server it makes. It panics on a nil ctx.
func (t *Topic[T]) Mirror(ctx context.Context, o broadcast.Options) (*broadcast.Broadcaster[T], error) {
	mustContext(ctx)
	if err := checkQueue("broadcast.Options", o.QueueLength, o.IncomingQueueLength, o.Full); err != nil {
		return nil, err
	}
	if t.isClosed() {
		return nil, ErrClosed
	}
	info, err := t.streamState(ctx)
	if err != nil {
		return nil, err
	}
	m := &mirror[T]{t: t, b: broadcast.New[T](o)}
	m.f = newFeed(t, "mirror", info.State.LastSeq+1)
	m.f.out = func(ctx context.Context, _ uint64, v T, _ *readMark) error {
		err := m.b.Publish(ctx, v)
		if errors.Is(err, broadcast.ErrClosed) {
			return errDestClosed
		}
		return err
	}
	m.f.stopOn = m.b.Done()
	m.f.end = func(ctx context.Context, _ error) {
		t.retire(m)
		_ = m.b.Shutdown(ctx)
	}
	m.f.exit = func() { t.forget(m) }
	if err := m.f.open(ctx); err != nil {
		_ = m.b.Shutdown(context.Background())
		return nil, err
	}
	if err := t.adopt(m); err != nil {
		m.f.closeConsumer()
		_ = m.b.Shutdown(context.Background())
		return nil, err
	}
	m.f.start()
	return m.b, nil
}

// shutdown stops the mirror's feed, then its broadcaster. What an earlier
// Shutdown of the broadcaster abandoned (its own context ended: the feed's
// when the stream was deleted, or the user's) is counted in the
// broadcaster's Stats, and its later Shutdown calls return ErrClosed:
// that is not this Shutdown's error.
func (m *mirror[T]) shutdown(ctx context.Context) error {
	err := m.f.halt(ctx)
	if berr := m.b.Shutdown(ctx); err == nil && !errors.Is(berr, broadcast.ErrClosed) {
		err = berr
	}
	return err
}

// Forward publishes every value b delivers to p, in b's order, until stop is
// called or b shuts down. It watches b with b's own options: under Block
// (b's default) nothing is lost between b and p, and a slow stream holds b
// back once p's window is full.
//
// stop(ctx) stops taking values from b, publishes those already taken, and
// returns once the forwarding goroutine has exited. If ctx ends first it
// abandons the rest, counts them in p's Stats().Abandoned, and returns
// ctx.Err(). Values are also abandoned, and counted, if p shuts down first.
// stop does not shut p down. It is idempotent. If b was already shut down,
// nothing is forwarded and stop returns ErrClosed. stop panics on a nil
// ctx, before it stops anything.
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
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		var failed error
		for v := range w.All() {
			// Publish waits through what passes: a full window, the
			// connection's limits, a reconnection. What it returns
			// otherwise is p's Shutdown, the end of stop's context or a
			// closed connection: nothing more can be published.
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
		// p shut down, or stop's context ended: count the value that
		// failed and those still queued (a loop that breaks leaves the
		// values it took but did not yield queued).
		w.Stop()
		n := uint64(1)
		for range w.All() {
			n++
		}
		p.mu.Lock()
		p.link.stats.abandoned += n
		p.mu.Unlock()
		p.logLost.warn("natsbridge: forward abandoned values", slog.Uint64("values", n), errAttr(failed))
		p.flushLogs() // this line may have been suppressed, and p may be shut down
	}()
	var once sync.Once
	return func(stopCtx context.Context) error {
		mustContext(stopCtx)
		once.Do(w.Stop)
		select {
		case <-done:
			return nil
		case <-stopCtx.Done():
		}
		cancel()
		<-done
		return stopCtx.Err()
	}
}
