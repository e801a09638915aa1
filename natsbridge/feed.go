package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	// inactiveThreshold is how long the server keeps a consumer nobody
	// pulls from. A Block watcher whose reader pauses longer loses its
	// consumer; the feed then creates it again where it stopped.
	inactiveThreshold = 5 * time.Minute
	// deleteTimeout bounds the deletion of a consumer when a feed stops.
	deleteTimeout = 2 * time.Second
	// probeInterval is how often an idle mirror checks whether its
	// broadcaster was shut down.
	probeInterval = 200 * time.Millisecond
)

var (
	// errLostInTransit ends a consumer that skipped a delivery (a message
	// lost with a connection): the feed resumes where it stopped.
	errLostInTransit = errors.New("natsbridge: delivery lost in transit")
	// errDestClosed ends a feed whose destination was shut down.
	errDestClosed = errors.New("natsbridge: destination closed")
)

// feed reads a topic's stream from one sequence on, in order, through one
// ephemeral consumer at a time, and hands each decoded value to out. It is
// the one reader behind a Watcher or a mirror.
//
// The consumer acknowledges nothing and asks for ReadAhead messages at a
// time; a feed whose out blocks (a full Block watcher) stops asking, so the
// server keeps the backlog. Whenever the consumer is lost (a server
// restart, a lost connection, a message lost in transit, inactivity) the
// feed creates a new one that starts at the first sequence it has not
// handled: it never skips a stored value and never hands one out twice.
// A stream sequence that is skipped by a consumer that lost nothing was
// removed from the stream: it is counted as a gap.
type feed[T any] struct {
	t   *Topic[T]
	out func(ctx context.Context, seq uint64, v T) error
	// idle, if set, is called when no message came for probeInterval and
	// reports whether the destination was shut down.
	idle func() bool
	// end, if set, is called by the feed goroutine when the feed ends for
	// a reason of its own (the stream is gone), with the error; ctx ends
	// when the feed is stopped.
	end func(ctx context.Context, err error)
	// exit, if set, is called by the feed goroutine as it exits.
	exit func()

	ctx    context.Context // ended by stop; bounds every call the goroutine makes
	cancel context.CancelFunc

	mu      sync.Mutex // guards the fields down to waiters
	it      jetstream.MessagesContext
	cons    jetstream.Consumer
	stopped bool
	waiters []posWaiter

	hasWaiters atomic.Bool
	pos        atomic.Uint64 // the last stream sequence handled
	next       uint64        // the next stream sequence owed; owned by the goroutine

	done chan struct{} // closed when the goroutine has exited

	errMu sync.Mutex // guards err
	err   error      // why the feed ended on its own

	gaps     atomic.Uint64
	poisoned atomic.Uint64
	restarts atomic.Uint64

	logGap, logPoison, logRestart limitedLog
}

// posWaiter is a Flush waiting for the feed to handle sequence target.
type posWaiter struct {
	target uint64
	ch     chan struct{}
}

func newFeed[T any](t *Topic[T], kind string, start uint64) *feed[T] {
	ctx, cancel := context.WithCancel(context.Background())
	l := t.log.With(slog.String("component", kind))
	f := &feed[T]{
		t:          t,
		ctx:        ctx,
		cancel:     cancel,
		next:       start,
		done:       make(chan struct{}),
		logGap:     limitedLog{l: l},
		logPoison:  limitedLog{l: l},
		logRestart: limitedLog{l: l},
	}
	f.pos.Store(start - 1)
	return f
}

// open creates a consumer at f.next and starts reading it. The first open
// runs in Watch or Mirror with the caller's ctx; later ones in the
// goroutine with f.ctx.
func (f *feed[T]) open(ctx context.Context) error {
	cons, err := f.t.stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
		Description:       "herald " + f.t.name,
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       f.next,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: inactiveThreshold,
		MemoryStorage:     true,
		Replicas:          1,
	})
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("%w: %q", ErrStreamGone, f.t.streamID)
	}
	if err != nil {
		return fmt.Errorf("natsbridge: topic %q: create consumer: %w", f.t.name, err)
	}
	it, err := cons.Messages(
		jetstream.PullMaxMessages(f.t.readAhead),
		jetstream.PullHeartbeat(f.t.heartbeat),
		jetstream.WithMessagesErrOnMissingHeartbeat(true),
	)
	if err != nil {
		f.deleteConsumer(cons)
		return fmt.Errorf("natsbridge: topic %q: read consumer: %w", f.t.name, err)
	}
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		it.Stop()
		f.deleteConsumer(cons)
		return ErrClosed
	}
	f.it, f.cons = it, cons
	f.mu.Unlock()
	return nil
}

// start starts the feed goroutine, once open has succeeded. The goroutine
// reads until stop is called or the stream is gone.
func (f *feed[T]) start() { go f.run() }

func (f *feed[T]) run() {
	defer close(f.done)
	if f.exit != nil {
		defer f.exit()
	}
	var fatal error
	for attempt := 0; ; attempt++ {
		f.mu.Lock()
		it, cons := f.it, f.cons
		f.mu.Unlock()
		err := f.consume(it, cons)
		f.closeConsumer()
		if f.ctx.Err() != nil || errors.Is(err, errDestClosed) {
			break
		}
		f.restarts.Add(1)
		f.t.restarts.Add(1)
		f.logRestart.warn("natsbridge: consumer lost, resuming", slog.Uint64("seq", f.next), slog.Any("err", err))
		if fatal = f.reopen(); fatal != nil {
			break
		}
	}
	if fatal != nil && !errors.Is(fatal, ErrClosed) {
		// Set before end closes the destination, so that a reader who
		// sees the end finds the reason.
		f.errMu.Lock()
		f.err = fatal
		f.errMu.Unlock()
		f.logRestart.warn("natsbridge: reading ended", slog.Any("err", fatal))
		if f.end != nil {
			f.end(f.ctx, fatal)
		}
	}
}

// reopen creates the consumer again, retrying with a back-off while the
// server is unreachable. It returns nil once reading can go on, and an
// error when it cannot (the feed was stopped, the stream is gone, the
// connection is closed).
func (f *feed[T]) reopen() error {
	wait := 50 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
		_, err := f.t.streamState(ctx)
		if err == nil {
			err = f.open(ctx)
		}
		cancel()
		switch {
		case err == nil:
			return nil
		case f.ctx.Err() != nil:
			return ErrClosed
		case errors.Is(err, ErrStreamGone), errors.Is(err, ErrClosed), errors.Is(err, nats.ErrConnectionClosed):
			return err
		}
		f.logRestart.warn("natsbridge: cannot resume yet", slog.Uint64("seq", f.next), slog.Any("err", err))
		select {
		case <-time.After(wait):
		case <-f.ctx.Done():
			return ErrClosed
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// consume hands out the messages of one consumer until it fails.
func (f *feed[T]) consume(it jetstream.MessagesContext, cons jetstream.Consumer) error {
	var delivered uint64 // the consumer's delivery sequence
	wait := f.t.heartbeat
	if f.idle != nil {
		wait = probeInterval
	}
	quiet := time.Duration(0) // how long no message came
	for {
		msg, err := it.Next(jetstream.NextMaxWait(wait))
		if errors.Is(err, nats.ErrTimeout) {
			if f.idle != nil && f.idle() {
				return errDestClosed
			}
			if quiet += wait; quiet >= f.t.heartbeat {
				quiet = 0
				if err := f.check(cons, delivered); err != nil {
					return err
				}
			}
			continue
		}
		if err != nil {
			return err
		}
		quiet = 0
		md, err := msg.Metadata()
		if err != nil {
			return err
		}
		if md.Sequence.Consumer != delivered+1 {
			return errLostInTransit
		}
		delivered = md.Sequence.Consumer
		seq := md.Sequence.Stream
		if seq < f.next {
			continue // handled already; a fresh consumer never sends it
		}
		if seq > f.next {
			// This consumer lost nothing, so the stream no longer holds
			// the sequences in between.
			n := seq - f.next
			f.gaps.Add(n)
			f.t.gaps.Add(n)
			f.logGap.warn("natsbridge: values removed from the stream before they were read",
				slog.Uint64("from", f.next), slog.Uint64("to", seq-1))
		}
		f.next = seq + 1
		v, err := decode(f.t.codec, msg.Data())
		if err != nil {
			f.poisoned.Add(1)
			f.t.poisoned.Add(1)
			f.logPoison.warn("natsbridge: poison message skipped", slog.Uint64("seq", seq), slog.Any("err", err))
			f.advance(seq)
			continue
		}
		if err := f.out(f.ctx, seq, v); err != nil {
			return err
		}
		f.advance(seq)
	}
}

// check asks the server about an idle consumer. It returns an error if the
// consumer is gone (a server restart) or unreachable, and errLostInTransit
// if the server delivered more than the feed received: a message dropped
// on the way (a lost connection, a client buffer overflow) that no later
// message would reveal.
func (f *feed[T]) check(cons jetstream.Consumer, delivered uint64) error {
	ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
	defer cancel()
	info, err := cons.Info(ctx)
	if err != nil {
		return err
	}
	if info.Delivered.Consumer > delivered {
		return errLostInTransit
	}
	return nil
}

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
	if cons != nil {
		f.deleteConsumer(cons)
	}
}

func (f *feed[T]) deleteConsumer(cons jetstream.Consumer) {
	if !f.t.js.Conn().IsConnected() {
		return // the server drops it after inactiveThreshold
	}
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	_ = f.t.stream.DeleteConsumer(ctx, cons.CachedInfo().Name)
}

// stop makes the goroutine exit: it ends f.ctx (which interrupts out and
// any call to the server) and the current consumer's reading. It does not
// wait; done is closed once the goroutine has exited.
func (f *feed[T]) stop() {
	f.mu.Lock()
	f.stopped = true
	it := f.it
	f.mu.Unlock()
	f.cancel()
	if it != nil {
		it.Stop()
	}
}

// advance records that seq was handled and releases the Flush calls that
// waited for it.
func (f *feed[T]) advance(seq uint64) {
	f.pos.Store(seq)
	if !f.hasWaiters.Load() {
		return
	}
	f.mu.Lock()
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if w.target <= seq {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	clear(f.waiters[len(kept):])
	f.waiters = kept
	f.hasWaiters.Store(len(kept) > 0)
	f.mu.Unlock()
}

// waitPos returns once the feed has handled sequence target (placed its
// value with out, or counted it as a gap or a poison message), or with
// ErrClosed (or the feed's error) if the feed ended first, or ctx.Err().
func (f *feed[T]) waitPos(ctx context.Context, target uint64) error {
	if f.pos.Load() >= target {
		return nil
	}
	w := posWaiter{target: target, ch: make(chan struct{})}
	f.mu.Lock()
	f.waiters = append(f.waiters, w)
	f.hasWaiters.Store(true)
	f.mu.Unlock()
	if f.pos.Load() >= target {
		f.dropWaiter(w)
		return nil
	}
	select {
	case <-w.ch:
		return nil
	case <-f.done:
		f.dropWaiter(w)
		if f.pos.Load() >= target {
			return nil
		}
		if err := f.failure(); err != nil {
			return err
		}
		return ErrClosed
	case <-ctx.Done():
		f.dropWaiter(w)
		return ctx.Err()
	}
}

// failure returns why the feed ended on its own, or nil.
func (f *feed[T]) failure() error {
	f.errMu.Lock()
	defer f.errMu.Unlock()
	return f.err
}

func (f *feed[T]) dropWaiter(w posWaiter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, x := range f.waiters {
		if x.ch == w.ch {
			f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
			break
		}
	}
	f.hasWaiters.Store(len(f.waiters) > 0)
}
