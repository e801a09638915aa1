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
	"github.com/nats-io/nuid"

	"github.com/heraldgo/herald/internal/lifecycle"
	"github.com/heraldgo/herald/internal/wait"
)

// The feed's lifecycle: its consumer made, read, lost and made again, and
// the feed goroutine that does it. The read loop is in feed_read.go; the
// count of what the feed handled, its gaps and the calls that wait for it
// are in feed_pos.go.

const (
	// inactiveThreshold is how long the server keeps a consumer nobody
	// pulls from. A Block watcher whose reader pauses longer loses its
	// consumer; the feed then creates it again where it stopped.
	inactiveThreshold = 5 * time.Minute
	// deleteTimeout bounds the deletion of a consumer when a feed stops
	// (a Shutdown context that ends first cuts it shorter).
	deleteTimeout = 2 * time.Second
	// resumeTimeout bounds one attempt to create a consumer again. In a
	// cluster the server may place the consumer on a node that died a
	// moment ago (it takes a node killed without a word for alive for a
	// while), and the request then waits for an answer that never comes:
	// the next attempt, placed again, finds a live node.
	resumeTimeout = 2 * time.Second
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
	t *Topic[T]
	// durable, if set, makes the feed read a durable consumer shared with
	// other processes (see durable.go) rather than an ephemeral one.
	durable *durable
	out     func(ctx context.Context, seq uint64, v T, mark *readMark) error
	// stopOn, if set, is the destination's Done channel: the feed stops
	// as soon as it is closed.
	stopOn <-chan struct{}
	// end, if set, is called by the feed goroutine when the feed ends for
	// a reason of its own (the stream is gone), with the error; ctx ends
	// when the feed is stopped.
	end func(ctx context.Context, err error)
	// exit, if set, is called by the feed goroutine as it exits.
	exit func()

	// g runs the feed goroutine. Its Stopping ends with stop, and bounds
	// every call the goroutine makes while it reads; its Aborting ends
	// when halt's context ends first, and bounds the deletion of
	// consumers. A feed that ends by itself is stopped as its goroutine
	// exits.
	g *lifecycle.Group

	mu   sync.Mutex // guards it, cons
	it   jetstream.MessagesContext
	cons jetstream.Consumer

	// next is the first stream sequence not yet taken; pos counts up to
	// the last one handled: its value placed with out, or counted as a
	// gap or a poison message. pos < next. The goroutine moves both as it
	// reads; Flush moves them past a tail of removed values (see settle).
	// Both only grow. pos ends as the goroutine exits.
	next atomic.Uint64
	pos  wait.Counter

	// quiet is closed once the goroutine hands nothing more to out.
	quiet     chan struct{}
	quietOnce sync.Once

	errMu sync.Mutex // guards err
	err   error      // why the feed ended on its own

	gaps     atomic.Uint64
	poisoned atomic.Uint64
	restarts atomic.Uint64

	log                           *slog.Logger // for the one line that ends the feed
	logGap, logPoison, logRestart *limitedLog
}

func newFeed[T any](t *Topic[T], kind string, start uint64) *feed[T] {
	l := t.log.With(slog.String("component", kind))
	f := &feed[T]{
		t:          t,
		g:          lifecycle.New(),
		quiet:      make(chan struct{}),
		log:        l,
		logGap:     newLimitedLog(l),
		logPoison:  newLimitedLog(l),
		logRestart: newLimitedLog(l),
	}
	f.next.Store(start)
	f.pos.Advance(start - 1)
	return f
}

// open creates a consumer at f.next and starts reading it. The first open
// runs in Watch or Mirror with the caller's ctx; later ones in the
// goroutine, bounded by its Stopping. If it fails (or panics) once the
// consumer exists, it deletes the consumer.
func (f *feed[T]) open(ctx context.Context) error {
	if f.durable != nil {
		cons, it, err := f.openDurable(ctx)
		if err != nil {
			return err
		}
		return f.reading(cons, it)
	}
	name := "herald_" + nuid.Next()
	cons, err := f.t.stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
		Name:              name,
		Description:       "herald " + f.t.name,
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       f.next.Load(),
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: inactiveThreshold,
		MemoryStorage:     true,
		Replicas:          1,
	})
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("%w: %q", ErrStreamGone, f.t.streamID)
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			// The server may create it yet: delete it by name.
			f.deleteNamed(name)
		}
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

// launch starts the feed goroutine, once open has succeeded, if adopt
// (the topic recording the feed's owner) succeeds; otherwise it deletes
// the consumer and returns adopt's error. The goroutine is counted before
// adopt, so that a stop that comes between them (Topic.Shutdown) waits for
// it. It reads until stop is called or the stream is gone.
func (f *feed[T]) launch(adopt func() error) error {
	f.g.Add() // nothing else holds the feed yet: it cannot refuse
	if err := adopt(); err != nil {
		f.g.Done()
		f.closeConsumer()
		return err
	}
	go func() {
		defer f.g.Done()
		f.run()
	}()
	return nil
}

func (f *feed[T]) run() {
	defer f.pos.End()   // last: a waiter finds the feed's error set
	defer f.g.Stop()    // a feed that ended by itself is stopped too
	defer f.flushLogs() // a stopped feed has written its lines
	if f.exit != nil {
		defer f.exit()
	}
	var join func()
	if f.stopOn != nil {
		join = f.watchDest()
	}
	fatal := f.readAll()
	f.silence()
	if join != nil {
		// Reading has ended: stop watching the destination before end
		// shuts it down, so that its Shutdown, which delivers what is
		// queued, is not cut short by a stop it set off itself.
		join()
	}
	if fatal != nil && !errors.Is(fatal, ErrClosed) {
		f.fail(fatal)
	}
}

// readAll reads one consumer after another, each made again where the one
// before stopped, until the feed is stopped (it returns nil) or cannot
// resume (it returns why).
func (f *feed[T]) readAll() error {
	for {
		f.mu.Lock()
		it, cons := f.it, f.cons
		f.mu.Unlock()
		var err error
		if f.durable != nil {
			err = f.consumeDurable(it, cons)
		} else {
			err = f.consume(it, cons)
		}
		stopping := f.g.Stopping().Err() != nil || errors.Is(err, errDestClosed)
		if stopping {
			f.silence() // before the deletion, which may take a while
		}
		f.closeConsumer()
		if stopping {
			return nil
		}
		f.logRestart.warn("natsbridge: consumer lost, resuming", slog.Uint64("seq", f.next.Load()), errAttr(err))
		if err := f.reopen(); err != nil {
			return err
		}
		// Counted once the consumer exists again, not when it was lost:
		// a feed that cannot resume (a closed connection, a deleted
		// stream) has created nothing.
		f.restarts.Add(1)
		f.t.restarts.Add(1)
	}
}

// fail records why the feed ended on its own, before end closes the
// destination, so that a reader who sees the end finds the reason; then it
// calls end.
func (f *feed[T]) fail(err error) {
	f.errMu.Lock()
	f.err = err
	f.errMu.Unlock()
	f.log.Warn("natsbridge: reading ended", errAttr(err))
	if f.end != nil {
		f.end(f.g.Stopping(), err)
	}
}

// silence records that the goroutine hands nothing more to out.
func (f *feed[T]) silence() { f.quietOnce.Do(func() { close(f.quiet) }) }

// watchDest starts a goroutine that stops the feed once stopOn is closed,
// so that a feed idle in a read notices at once. It returns the function
// that ends that goroutine and waits for it, which the feed goroutine
// calls once it has stopped reading.
func (f *feed[T]) watchDest() (join func()) {
	quit, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-f.stopOn:
			f.stop()
		case <-quit:
		}
	}()
	return func() {
		close(quit)
		<-exited
	}
}

// reopen creates the consumer again, retrying with a back-off while the
// server is unreachable. It returns nil once reading can go on, and an
// error when it cannot (the feed was stopped, the stream is gone, the
// connection is closed).
func (f *feed[T]) reopen() error {
	stopping := f.g.Stopping()
	wait := 50 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(stopping, resumeTimeout)
		_, err := f.t.streamState(ctx)
		if err == nil {
			err = f.open(ctx)
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
		select {
		case <-time.After(wait):
		case <-stopping.Done():
			return ErrClosed
		}
		wait = min(2*wait, 2*time.Second)
	}
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
	if cons != nil && f.durable == nil { // a durable position stays on the server
		f.deleteConsumer(cons)
	}
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

// stop makes the goroutine exit: it ends the group's Stopping (which
// interrupts out and any call to the server) and the current consumer's
// reading. It does not wait.
func (f *feed[T]) stop() {
	f.g.Stop()
	f.mu.Lock()
	it := f.it
	f.mu.Unlock()
	if it != nil {
		it.Stop()
	}
}

// halt stops the feed and returns once its goroutine has exited. If ctx
// ends first, the feed gives up deleting its consumer (the server drops
// it after inactiveThreshold) and halt returns ctx.Err() once the
// goroutine has exited, which it then does at once.
func (f *feed[T]) halt(ctx context.Context) error {
	f.stop()
	defer f.flushLogs()
	return f.g.Shutdown(ctx)
}

// flushLogs reports the lines each of the feed's logs suppressed and no
// later line reported (see limitedLog). The feed goroutine calls it as it
// exits; halt again, for a Flush that counted gaps meanwhile.
func (f *feed[T]) flushLogs() {
	f.logGap.flush()
	f.logPoison.flush()
	f.logRestart.flush()
}

// endErr is what a call waiting on an ended feed returns: why it ended on
// its own, or ErrClosed.
func (f *feed[T]) endErr() error {
	if err := f.failure(); err != nil {
		return err
	}
	return ErrClosed
}

// failure returns why the feed ended on its own, or nil.
func (f *feed[T]) failure() error {
	f.errMu.Lock()
	defer f.errMu.Unlock()
	return f.err
}
