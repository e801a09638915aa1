package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

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

	// ctx is ended by stop; it bounds every call the goroutine makes
	// while it reads. cleanup is ended by halt when its caller's context
	// ends first; it bounds the deletion of consumers.
	ctx           context.Context
	cancel        context.CancelFunc
	cleanup       context.Context
	cancelCleanup context.CancelFunc

	mu      sync.Mutex // guards it, cons, stopped, waiters
	it      jetstream.MessagesContext
	cons    jetstream.Consumer
	stopped bool
	waiters []posWaiter

	hasWaiters atomic.Bool // len(waiters) > 0, for advance to read without mu
	// next is the first stream sequence not yet taken; pos the last one
	// handled: its value placed with out, or counted as a gap or a poison
	// message. pos < next. The goroutine moves both as it reads; Flush
	// moves them past a tail of removed values (see settle). Both only
	// grow.
	next atomic.Uint64
	pos  atomic.Uint64

	done chan struct{} // closed when the goroutine has exited
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

// posWaiter is a Flush waiting for the feed to handle sequence target.
type posWaiter struct {
	target uint64
	ch     chan struct{}
}

func newFeed[T any](t *Topic[T], kind string, start uint64) *feed[T] {
	ctx, cancel := context.WithCancel(context.Background())
	cleanup, cancelCleanup := context.WithCancel(context.Background())
	l := t.log.With(slog.String("component", kind))
	f := &feed[T]{
		t:             t,
		ctx:           ctx,
		cancel:        cancel,
		cleanup:       cleanup,
		cancelCleanup: cancelCleanup,
		done:          make(chan struct{}),
		quiet:         make(chan struct{}),
		log:           l,
		logGap:        newLimitedLog(l),
		logPoison:     newLimitedLog(l),
		logRestart:    newLimitedLog(l),
	}
	f.next.Store(start)
	f.pos.Store(start - 1)
	return f
}

// open creates a consumer at f.next and starts reading it. The first open
// runs in Watch or Mirror with the caller's ctx; later ones in the
// goroutine with f.ctx. If it fails (or panics) once the consumer exists,
// it deletes the consumer.
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
	if f.stopped {
		it.Stop()
		return ErrClosed
	}
	f.it, f.cons = it, cons
	return nil
}

// start starts the feed goroutine, once open has succeeded. The goroutine
// reads until stop is called or the stream is gone.
func (f *feed[T]) start() { go f.run() }

func (f *feed[T]) run() {
	defer close(f.done)
	defer f.flushLogs() // before done: a stopped feed has written its lines
	if f.exit != nil {
		defer f.exit()
	}
	var join func()
	if f.stopOn != nil {
		join = f.watchDest()
	}
	var fatal error
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
		stopping := f.ctx.Err() != nil || errors.Is(err, errDestClosed)
		if stopping {
			f.silence() // before the deletion, which may take a while
		}
		f.closeConsumer()
		if stopping {
			break
		}
		f.logRestart.warn("natsbridge: consumer lost, resuming", slog.Uint64("seq", f.next.Load()), errAttr(err))
		if fatal = f.reopen(); fatal != nil {
			break
		}
		// Counted once the consumer exists again, not when it was lost:
		// a feed that cannot resume (a closed connection, a deleted
		// stream) has created nothing.
		f.restarts.Add(1)
		f.t.restarts.Add(1)
	}
	f.silence()
	if join != nil {
		// Reading has ended: stop watching the destination before end
		// shuts it down, so that its Shutdown, which delivers what is
		// queued, is not cut short by a stop it set off itself.
		join()
	}
	if fatal != nil && !errors.Is(fatal, ErrClosed) {
		// Set before end closes the destination, so that a reader who
		// sees the end finds the reason.
		f.errMu.Lock()
		f.err = fatal
		f.errMu.Unlock()
		f.log.Warn("natsbridge: reading ended", errAttr(fatal))
		if f.end != nil {
			f.end(f.ctx, fatal)
		}
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
	wait := 50 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(f.ctx, resumeTimeout)
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
		case errors.Is(err, ErrStreamGone), errors.Is(err, ErrDurableGone), errors.Is(err, ErrClosed), errors.Is(err, nats.ErrConnectionClosed):
			return err
		}
		f.logRestart.warn("natsbridge: cannot resume yet", slog.Uint64("seq", f.next.Load()), errAttr(err))
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
	// behind: an idle check found the server ahead of delivered, as it
	// was then. A message may be on its way: it is lost only if the next
	// idle check finds the feed no further.
	behind, behindAt := false, uint64(0)
	idle := newIdleClock(f.ctx, f.t.heartbeat)
	defer idle.stop()
	for {
		msg, err := it.Next(idle.wait...)
		if idle.passed(err) {
			err := f.check(cons, delivered)
			switch {
			case errors.Is(err, errLostInTransit) && (!behind || behindAt != delivered):
				behind, behindAt = true, delivered
				continue
			case err != nil:
				return err
			}
			behind = false
			continue
		}
		if err != nil {
			return err
		}
		idle.tick()
		seq, dseq, ok := ackSequences(msg.Reply())
		if !ok {
			return fmt.Errorf("natsbridge: topic %q: not a stream's message: %q", f.t.name, msg.Reply())
		}
		if dseq != delivered+1 {
			return errLostInTransit
		}
		delivered = dseq
		if !f.take(seq) {
			continue // handled already; a fresh consumer never sends it
		}
		v, err := decode(f.t.codec, msg.Data())
		if err != nil {
			f.poisoned.Add(1)
			f.t.poisoned.Add(1)
			f.logPoison.warn("natsbridge: poison message skipped", slog.Uint64("seq", seq), errAttr(err))
			f.advance(seq)
			continue
		}
		if err := f.out(f.ctx, seq, v, nil); err != nil {
			return err
		}
		f.advance(seq)
	}
}

// take moves next past seq, the sequence of a message the consumer
// delivered, and reports whether the feed is to handle it (false if it
// was handled already). A consumer that lost nothing skips only
// sequences the stream no longer holds: those between next and seq are
// counted as gaps, and handled.
func (f *feed[T]) take(seq uint64) bool {
	for {
		n := f.next.Load()
		if seq < n {
			return false
		}
		if f.next.CompareAndSwap(n, seq+1) {
			if seq > n {
				f.countGaps(n, seq-1)
				f.advance(seq - 1)
			}
			return true
		}
		// A Flush settled a tail meanwhile (see settle): look again.
	}
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
			f.advance(last)
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
			// in case what was awaited has been removed. An error besides
			// the stream's deletion: wait as before.
			h, err := f.heldNow(ctx, last)
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case errors.Is(err, ErrStreamGone):
				return err
			case err == nil:
				held = h
			}
			continue
		}
		if held == last {
			return nil
		}
		select {
		case <-f.done:
			return f.endErr() // a stopped feed counts nothing more
		default:
		}
		// The feed has handled every sequence up to held, and the stream
		// holds nothing after held up to last.
		f.settle(last)
		// If the feed took a later value meanwhile, it counts the gap and
		// moves pos past last itself, at once.
		return f.waitPos(ctx, last)
	}
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

// check asks the server about an idle consumer. It returns an error if the
// consumer is gone (a server restart) or unreachable, and errLostInTransit
// if the server delivered more than the feed received: a message dropped
// on the way (a lost connection, a client buffer overflow) that no later
// message would reveal, or one still on its way (consume asks again a
// heartbeat later before it takes it for lost).
func (f *feed[T]) check(cons jetstream.Consumer, delivered uint64) error {
	ctx, cancel := context.WithTimeout(f.ctx, resumeTimeout)
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
	ctx, cancel := context.WithTimeout(f.cleanup, deleteTimeout)
	defer cancel()
	_ = f.t.stream.DeleteConsumer(ctx, name)
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

// halt stops the feed and returns once its goroutine has exited. If ctx
// ends first, the feed gives up deleting its consumer (the server drops
// it after inactiveThreshold) and halt returns ctx.Err() once the
// goroutine has exited, which it then does at once.
func (f *feed[T]) halt(ctx context.Context) error {
	f.stop()
	defer f.flushLogs()
	select {
	case <-f.done:
		return nil
	case <-ctx.Done():
	}
	f.cancelCleanup()
	<-f.done
	return ctx.Err()
}

// flushLogs reports the lines each of the feed's logs suppressed and no
// later line reported (see limitedLog). The feed goroutine calls it as it
// exits; halt again, for a Flush that counted gaps meanwhile.
func (f *feed[T]) flushLogs() {
	f.logGap.flush()
	f.logPoison.flush()
	f.logRestart.flush()
}

// advance records that every sequence up to seq was handled and releases
// the Flush calls that waited for it.
func (f *feed[T]) advance(seq uint64) {
	for {
		pos := f.pos.Load()
		if seq <= pos || f.pos.CompareAndSwap(pos, seq) {
			break
		}
	}
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
		return f.endErr()
	case <-ctx.Done():
		f.dropWaiter(w)
		return ctx.Err()
	}
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

// idleClock tells a feed's read loop when a heartbeat has passed with no
// message, without a timer per message: Next waits on a context that a
// timer ends once a whole heartbeat went by without a tick; each message
// ticks (one atomic add).
type idleClock struct {
	parent context.Context
	every  time.Duration
	ticks  atomic.Uint64
	seen   uint64 // ticks when the timer last looked (the timer's goroutine)
	ctx    context.Context
	cancel context.CancelFunc
	timer  *time.Timer
	wait   []jetstream.NextOpt // Next's options for the current period
}

func newIdleClock(parent context.Context, every time.Duration) *idleClock {
	c := &idleClock{parent: parent, every: every}
	c.period()
	return c
}

// period starts waiting for an idle heartbeat anew.
func (c *idleClock) period() {
	c.ctx, c.cancel = context.WithCancel(c.parent)
	c.wait = []jetstream.NextOpt{jetstream.NextContext(c.ctx)}
	c.seen = c.ticks.Load()
	cancel := c.cancel
	c.timer = time.AfterFunc(c.every, func() { c.look(cancel) })
}

// look ends the period if no message came since the last look, and looks
// again a heartbeat later otherwise.
func (c *idleClock) look(cancel context.CancelFunc) {
	if n := c.ticks.Load(); n != c.seen {
		c.seen = n
		c.timer.Reset(c.every)
		return
	}
	cancel()
}

func (c *idleClock) tick() { c.ticks.Add(1) }

// passed reports whether err, what Next returned, says that a heartbeat
// passed with no message (and starts the next period), rather than that
// the feed stopped or the read failed.
func (c *idleClock) passed(err error) bool {
	if err == nil || c.parent.Err() != nil || !errors.Is(err, context.Canceled) {
		return false
	}
	c.period()
	return true
}

func (c *idleClock) stop() {
	c.timer.Stop()
	c.cancel()
}

// ackSequences reads the stream sequence and the consumer's delivery
// sequence of a message from its reply subject, as the server writes it:
// $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<time>.<pending>,
// or with a domain and an account hash after $JS.ACK (and a last token of
// its own). It is jetstream.Msg.Metadata without the allocations, for the
// read loop.
func ackSequences(reply string) (sseq, dseq uint64, ok bool) {
	rest, ok := strings.CutPrefix(reply, "$JS.ACK.")
	if !ok {
		return 0, 0, false
	}
	skip := 3 // stream, consumer, delivered
	switch n := strings.Count(rest, ".") + 1; {
	case n == 7:
	case n >= 9:
		skip = 5 // domain, account hash too
	default:
		return 0, 0, false
	}
	for range skip {
		_, rest, _ = strings.Cut(rest, ".")
	}
	s, rest, _ := strings.Cut(rest, ".")
	d, _, _ := strings.Cut(rest, ".")
	sseq, err1 := strconv.ParseUint(s, 10, 64)
	dseq, err2 := strconv.ParseUint(d, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return sseq, dseq, true
}
