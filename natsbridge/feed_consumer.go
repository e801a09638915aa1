package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// A feed's consumers: made at the feed's next sequence, made again when
// lost, and deleted when the feed stops with them.

const (
	// inactiveThreshold is how long the server keeps a consumer nobody
	// pulls from. A Block watcher whose reader pauses longer loses its
	// consumer; the feed then creates it again where it stopped.
	inactiveThreshold = 5 * time.Minute
	// deleteTimeout bounds the deletion of a consumer when a feed stops
	// (a Shutdown context that ends first cuts it shorter).
	deleteTimeout = 2 * time.Second
	// resumeTimeout bounds one attempt to create a consumer again (or
	// another call the feed's goroutine makes): a request may go
	// unanswered for good (see attemptTimeout), and the next attempt is
	// answered.
	resumeTimeout = 2 * time.Second
)

// open creates a consumer at f.next named name (a durable watcher's is
// its position's: name is not used) and starts reading it. The first
// open runs in Watch or Mirror, each attempt bounded within the caller's
// ctx (see answered); later ones in the goroutine, bounded by its
// Stopping. The attempts of one sequence share a name, so that a request
// that timed out but landed, or lands later (held in the connection's
// buffer while it reconnects), makes no second consumer: creating a
// consumer again as it is returns it. If it fails (or panics) once the
// consumer exists, it deletes the consumer.
func (f *feed[T]) open(ctx context.Context, name string) error {
	if f.durable != nil {
		cons, it, err := f.openDurable(ctx)
		if err != nil {
			return err
		}
		return f.reading(cons, it)
	}
	cons, err := f.createConsumer(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("%w: %q", ErrStreamGone, f.t.streamID)
	}
	if err != nil {
		f.createFailed(ctx, name)
		return fmt.Errorf("natsbridge: topic %q: create consumer: %w", f.t.name, err)
	}
	kept := false
	defer func() {
		if !kept {
			f.deleteConsumer(cons)
		}
	}()
	it, err := cons.Messages(
		jetstream.PullMaxMessages(f.t.readAhead),
		jetstream.PullHeartbeat(f.t.heartbeat),
		jetstream.WithMessagesErrOnMissingHeartbeat(true),
	)
	if err != nil {
		return fmt.Errorf("natsbridge: topic %q: read consumer: %w", f.t.name, err)
	}
	if err := f.reading(cons, it); err != nil {
		return err
	}
	kept = true
	return nil
}

// createConsumer creates the feed's consumer name, at f.next. The server
// handles API requests side by side: a create that landed with this
// feed's deletion of the same name (an earlier attempt's, which timed
// out: see createFailed) may be told the consumer does not exist, the
// deletion having removed it under the create. The deletion is done by
// then: it creates the consumer again.
func (f *feed[T]) createConsumer(ctx context.Context, name string) (jetstream.Consumer, error) {
	cfg := jetstream.ConsumerConfig{
		Name:              name,
		Description:       "herald " + f.t.name,
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       f.next.Load(),
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: inactiveThreshold,
		MemoryStorage:     true,
		Replicas:          1,
	}
	cons, err := f.t.stream.CreateConsumer(ctx, cfg)
	for try := 1; try < 3 && errors.Is(err, jetstream.ErrConsumerDoesNotExist); try++ {
		cons, err = f.t.stream.CreateConsumer(ctx, cfg)
	}
	return cons, err
}

// reading records the consumer the feed reads, unless the feed was stopped
// meanwhile.
func (f *feed[T]) reading(cons jetstream.Consumer, it jetstream.MessagesContext) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.g.Stopping().Err() != nil {
		it.Stop()
		return ErrClosed
	}
	f.it, f.cons = it, cons
	return nil
}

// reopen creates the consumer again, retrying with a back-off while the
// server is unreachable. It returns nil once reading can go on, and an
// error when it cannot (the feed was stopped, the stream is gone, the
// connection is closed).
func (f *feed[T]) reopen() error {
	stopping := f.g.Stopping()
	name := consumerName()
	var b backoff
	for {
		ctx, cancel := context.WithTimeoutCause(stopping, resumeTimeout, errAttemptTimedOut)
		_, err := f.t.streamState(ctx)
		if err == nil {
			err = f.open(ctx, name)
		}
		cancel()
		switch {
		case err == nil:
			return nil
		case stopping.Err() != nil:
			return ErrClosed
		case errors.Is(err, ErrStreamGone), errors.Is(err, ErrDurableGone), errors.Is(err, ErrClosed), errors.Is(err, nats.ErrConnectionClosed):
			return err
		}
		f.logRestart.warn("natsbridge: cannot resume yet", slog.Uint64("seq", f.next.Load()), errAttr(err))
		if !b.wait(stopping) {
			return ErrClosed
		}
	}
}

// consumerName returns a new name for a feed's consumer.
func consumerName() string { return "herald_" + nuid.Next() }

// closeConsumer stops reading the current consumer and deletes it from the
// server (which would otherwise drop it after inactiveThreshold).
func (f *feed[T]) closeConsumer() {
	f.mu.Lock()
	it, cons := f.it, f.cons
	f.it, f.cons = nil, nil
	f.mu.Unlock()
	if it != nil {
		it.Stop()
	}
	if cons != nil && f.durable == nil { // a durable position stays on the server
		f.deleteConsumer(cons)
	}
}

// createFailed deletes the consumer name, whose create failed, if the
// server may create it yet (ctx ended): before another attempt with the
// same name (ctx ended on its attempt's bound), waiting for the answer;
// once the caller gave up, without a wait.
func (f *feed[T]) createFailed(ctx context.Context, name string) {
	switch {
	case ctx.Err() == nil:
	case errors.Is(context.Cause(ctx), errAttemptTimedOut):
		f.deleteNamed(name)
	default:
		f.dropNamed(name)
	}
}

// dropNamed asks the server to delete the consumer name and waits for
// nothing: for a caller whose ctx ended, which must not be kept. The
// server may handle it before a create still on its way (it handles API
// requests side by side); that consumer it drops after
// inactiveThreshold.
func (f *feed[T]) dropNamed(name string) {
	nc := f.t.js.Conn()
	_ = nc.PublishRequest("$JS.API.CONSUMER.DELETE."+f.t.streamID+"."+name, nc.NewRespInbox(), nil)
}

func (f *feed[T]) deleteConsumer(cons jetstream.Consumer) {
	f.deleteNamed(cons.CachedInfo().Name)
}

// deleteNamed deletes the consumer name, if the server can be reached; it
// drops it by itself after inactiveThreshold otherwise.
func (f *feed[T]) deleteNamed(name string) {
	if !f.t.js.Conn().IsConnected() {
		return
	}
	ctx, cancel := context.WithTimeout(f.g.Aborting(), deleteTimeout)
	defer cancel()
	_ = f.t.stream.DeleteConsumer(ctx, name)
}
