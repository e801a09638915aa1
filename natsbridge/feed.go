package natsbridge

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge/internal/lifecycle"
	"github.com/heraldgo/herald/natsbridge/internal/wait"
)

// The feed and its goroutine, from launch to halt. Its consumers are made,
// and made again, in feed_consumer.go; the read loop is in feed_read.go;
// the count of what the feed handled, its gaps and the calls that wait for
// it are in feed_pos.go.

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
	// dest is where the feed places what it reads, given when it is
	// built: a watcher or a mirror.
	dest dest[T]
	// durable, if set, makes the feed read a durable consumer shared with
	// other processes (see durable.go) rather than an ephemeral one.
	durable *durable

	// g runs the feed goroutine. Its Stopping ends with stop, and bounds
	// every call the goroutine makes while it reads; its Aborting ends
	// when halt's context ends first, and bounds the deletion of
	// consumers. A feed that ends by itself is stopped as its goroutine
	// exits.
	g *lifecycle.Group

	mu   sync.Mutex // guards it, cons
	it   jetstream.MessagesContext
	cons jetstream.Consumer

	// next is the first stream sequence not yet taken; pos the last one
	// handled: its value placed with out, or counted as a gap or a poison
	// message. pos < next. The goroutine moves both as it reads; Flush
	// moves them past a tail of removed values (see settle). Both only
	// grow. pos ends as the goroutine exits (see feed_pos.go).
	next atomic.Uint64
	pos  wait.Counter
	// tail is the last run of sequences settle counted as gaps, which pos
	// passes once the value before it is handled.
	tail atomic.Pointer[span]
	// rewound is set when a durable feed rewinds next (see
	// feed.activate), until the reset after it: the goroutine's own.
	rewound bool

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

// dest is what a feed feeds. The feed goroutine calls its methods.
type dest[T any] interface {
	// put places a value the feed read (or a poison message: it.err is
	// set), waiting under Block until ctx ends (the feed is stopped); it
	// returns errDestClosed if the destination is closed.
	put(ctx context.Context, it item[T]) error
	// done returns a channel closed when the destination shuts down on
	// its own, which stops the feed at once, or nil.
	done() <-chan struct{}
	// ended is called when the feed ends on its own (the stream is gone,
	// or the position deleted), with why; ctx ends when the feed is
	// stopped.
	ended(ctx context.Context, err error)
	// discard gives back what the destination holds and its application
	// has not taken (a durable watcher whose position another reader held
	// meanwhile, or that was fenced), and returns the lowest sequence of
	// it, 0 if none.
	discard() uint64
	// exited is called as the feed goroutine exits.
	exited()
}

func newFeed[T any](t *Topic[T], kind string, start uint64, to dest[T], d *durable) *feed[T] {
	l := t.log.With(slog.String("component", kind))
	f := &feed[T]{
		t:          t,
		dest:       to,
		durable:    d,
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
	defer f.dest.exited()
	var join func()
	if stopOn := f.dest.done(); stopOn != nil {
		join = f.watchDest(stopOn)
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
	f.dest.ended(f.g.Stopping(), err)
}

// silence records that the goroutine hands nothing more to out.
func (f *feed[T]) silence() { f.quietOnce.Do(func() { close(f.quiet) }) }

// watchDest starts a goroutine that stops the feed once stopOn, the
// destination's done channel, is closed,
// so that a feed idle in a read notices at once. It returns the function
// that ends that goroutine and waits for it, which the feed goroutine
// calls once it has stopped reading.
func (f *feed[T]) watchDest(stopOn <-chan struct{}) (join func()) {
	g := lifecycle.New()
	g.Go(func() {
		select {
		case <-stopOn:
			f.stop()
		case <-g.Stopping().Done():
		}
	})
	return func() { _ = g.Shutdown(context.Background()) }
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
