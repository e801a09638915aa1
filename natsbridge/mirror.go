package natsbridge

import (
	"context"
	"errors"

	"github.com/heraldgo/herald/broadcast"
	"github.com/nats-io/nats.go/jetstream"
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
// the calls to the server it makes, made again as Watch's are when the
// server leaves one unanswered. It panics on a nil ctx.
func (t *Topic[T]) Mirror(ctx context.Context, o broadcast.Options) (*broadcast.Broadcaster[T], error) {
	mustContext(ctx)
	if err := checkMirrorOptions(o); err != nil {
		return nil, err
	}
	if t.isClosed() {
		return nil, t.shutErr
	}
	var info *jetstream.StreamInfo
	err := answered(ctx, func(ctx context.Context) (err error) {
		info, err = t.streamState(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	m := &mirror[T]{t: t, b: broadcast.New[T](o)}
	m.f = newFeed(t, "mirror", info.State.LastSeq+1, m, nil)
	name := consumerName()
	err = answered(ctx, func(ctx context.Context) error { return m.f.open(ctx, name) })
	if err == nil {
		err = m.f.launch(func() error { return t.adopt(m) })
	}
	if err != nil {
		_ = m.b.Shutdown(context.Background())
		return nil, err
	}
	return m.b, nil
}

// put publishes a value the feed read to the broadcaster. A broadcaster
// carries values only: a mirror's watchers get no trace context (read
// through a Watcher where it matters), and poison messages (counted by the feed) are
// passed over.
func (m *mirror[T]) put(ctx context.Context, it item[T]) error {
	if it.err != nil {
		return nil
	}
	err := m.b.Publish(ctx, it.v)
	if errors.Is(err, broadcast.ErrClosed) {
		return errDestClosed
	}
	return err
}

// done stops the feed as soon as the broadcaster's Shutdown begins.
func (m *mirror[T]) done() <-chan struct{} { return m.b.Done() }

// ended shuts the broadcaster down once the stream is gone: its watchers
// still receive every value queued, then close.
func (m *mirror[T]) ended(ctx context.Context, _ error) {
	m.t.retire(m)
	_ = m.b.Shutdown(ctx)
}

func (m *mirror[T]) discard() uint64 { return 0 }
func (m *mirror[T]) exited()         { m.t.forget(m) }

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
