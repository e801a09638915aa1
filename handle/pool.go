package handle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/internal/burst"
	"github.com/heraldgo/herald/internal/lifecycle"
	"github.com/heraldgo/herald/internal/ring"
	"github.com/heraldgo/herald/internal/wait"
)

// Func handles one value. It returns nil once the value is handled; an
// error (or a panic, recovered) makes the Pool handle the value again
// after a wait, or, once it failed Options.MaxAttempts times or returned
// an error marked Permanent, give it up as a dead letter. ctx ends when
// the Pool's Shutdown runs out of time.
type Func[T any] func(ctx context.Context, v T) error

// Pool handles the values of a Source with up to Options.Workers handlers
// at once, one value at a time per key and in the order the source
// delivered them, values of different keys at once. Every value received
// gets one fate: handled, dead-lettered, or, at Shutdown, abandoned (see
// Stats). Its zero value is not usable: make one with New, and call
// Shutdown when done with it. It is safe for concurrent use.
type Pool[T any, K comparable] struct {
	src  Source[T]
	acks AckSource[T]   // src, if it is one
	sink DeadLetterSink // src, if it is one
	key  func(T) K      // nil: every value is its own key
	fn   Func[T]
	o    Options
	dead *broadcast.Broadcaster[DeadLetter[T, K]]
	// deadW is the watcher Pool.DeadLetters returns, registered before
	// anything is read, so that no dead letter goes before a reader.
	deadW *broadcast.Watcher[DeadLetter[T, K]]

	// g runs the reader, the workers and the supervisor; its Aborting is
	// the handlers' ctx. readCtx ends at Shutdown: the reader's receive.
	g        *lifecycle.Group
	now      atomic.Int64 // the supervisor's clock (UnixNano), moved every tick
	readCtx  context.Context
	stopRead context.CancelFunc
	// readOver ends once the reader has returned: the Pool receives no
	// more values (readEnded, under mu, says the same).
	readOver context.Context
	endRead  context.CancelFunc
	wakeSup  chan struct{} // capacity 1: an earlier retry is due
	shutOnce sync.Once
	shutErr  error

	logPanic, logDead, logSlow burst.Burst

	floor wait.Counter // every value received before this order has its fate

	mu      sync.Mutex // guards the fields below
	keys    map[K]*lane[T, K]
	ready   ring.Ring[*lane[T, K]] // lanes whose head waits for a worker
	busy    busyList[T, K]         // lanes whose head has begun, oldest first
	retry   retryHeap[T, K]
	free    []*lane[T, K]
	ords    ordSet
	workers wait.Queue // workers waiting for a ready lane
	// spinning counts the workers that looked for a ready lane, found
	// none, and look again a few times before they park: a lane made
	// ready meanwhile needs no wake-up.
	spinning  int
	reader    wait.Queue // the reader waiting for room
	stats     Stats[K]   // counters; Keys, Paused, Blocked are filled in by Stats()
	stopped   bool       // Shutdown began
	readErr   error      // why reading ended
	readEnded bool       // the reader has returned
}

// entry is a value in the Pool: its receive order, its source's sequence,
// and the attempts its source counted before this delivery.
type entry[T any] struct {
	v      T
	seq    uint64
	ord    uint64
	before int
}

// lane is one key's values, in order; only its head is handled, by one
// worker at a time. A lane exists while it holds a value.
type lane[T any, K comparable] struct {
	key     K
	vals    ring.Ring[entry[T]]
	running bool      // a worker holds the head
	retryAt time.Time // the head waits out a retry until then; zero if not
	heapIdx int       // the lane's place in the retry heap, -1 if none
	// The head's attempts in this Pool, when its first and last began,
	// and when the key was last logged as slow.
	tries       int
	first, last time.Time
	logged      time.Time
	// prev and next link the lane in the Pool's busy list while its head
	// has begun; inBusy says whether it is there.
	prev, next *lane[T, K]
	inBusy     bool
}

// New returns a Pool that handles the values of src with fn, ordered by
// key: values with one key are handled one at a time, in the order src
// delivered them; values with different keys at once, by up to
// o.Workers handlers. A nil key makes every value its own key: handled in
// parallel, with no order (give K explicitly: New[T, struct{}](src, nil,
// fn, o)).
//
// The Pool takes src over: it reads it alone, and its Shutdown stops it.
// If src is an AckSource (a durable natsbridge watcher), the Pool marks
// each value done once it is handled or dead-lettered, so that src
// acknowledges only those.
//
// New starts 2 + o.Workers goroutines (a reader, a supervisor of retries
// and slow keys, the workers), which Shutdown ends. It panics on a nil src
// or fn, or an invalid o.
func New[T any, K comparable](src Source[T], key func(T) K, fn Func[T], o Options) *Pool[T, K] {
	if src == nil || reflect.ValueOf(src).IsZero() {
		panic("handle: nil Source")
	}
	if fn == nil {
		panic("handle: nil Func")
	}
	o = o.resolved()
	p := &Pool[T, K]{
		src:     src,
		key:     key,
		fn:      fn,
		o:       o,
		dead:    broadcast.New[DeadLetter[T, K]](broadcast.Options{QueueLength: o.DeadLetterQueue, IncomingQueueLength: 1}),
		g:       lifecycle.New(),
		wakeSup: make(chan struct{}, 1),
		keys:    make(map[K]*lane[T, K]),
		ready:   ring.New[*lane[T, K]](0),
		workers: wait.NewQueue(),
		reader:  wait.NewQueue(),
	}
	p.now.Store(time.Now().UnixNano())
	p.acks, _ = src.(AckSource[T])
	p.sink, _ = src.(DeadLetterSink)
	p.deadW, _ = p.dead.Watch() // a new broadcaster: it cannot refuse
	p.readCtx, p.stopRead = context.WithCancel(context.Background())
	p.readOver, p.endRead = context.WithCancel(context.Background())
	p.g.Go(p.read)
	p.g.Go(p.supervise)
	for range o.Workers {
		p.g.Go(p.work)
	}
	return p
}

// DeadLetters returns the watcher of the Pool's dead letters: every value
// it gives up on, with its key and why, unless its source keeps them (see
// DeadLetterSink). It was registered when the Pool was made, so it misses
// none. It is a Block watcher of Options.DeadLetterQueue values: a worker
// that gives a value up waits for room, so read it. It closes once the
// Pool has shut down and its last dead letter was read.
func (p *Pool[T, K]) DeadLetters() *broadcast.Watcher[DeadLetter[T, K]] { return p.deadW }

// read is the reader goroutine: it takes values from the source while
// the Pool has room, and places each behind its key.
func (p *Pool[T, K]) read() {
	defer func() {
		p.mu.Lock()
		p.readEnded = true
		p.mu.Unlock()
		p.endRead()
	}()
	p.mu.Lock()
	if !p.waitRoomLocked() {
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	for {
		d, err := p.receive()
		if err != nil {
			p.mu.Lock()
			if !p.stopped {
				p.readErr = err
			}
			p.mu.Unlock()
			return
		}
		if !p.accept(d) {
			return
		}
	}
}

// waitRoomLocked waits until the Pool has room for a value, and reports
// false once it is stopped.
func (p *Pool[T, K]) waitRoomLocked() bool {
	for !p.stopped && p.full() {
		if !p.stats.Paused {
			p.stats.Paused = true
			p.stats.Pauses++
		}
		c := p.reader.ParkLocked()
		p.mu.Unlock()
		select {
		case <-c:
		case <-p.readCtx.Done():
		}
		p.mu.Lock()
		p.reader.UnparkLocked()
	}
	p.stats.Paused = false
	return !p.stopped
}

// full reports whether the Pool holds QueueLength values, or reading runs
// Window values ahead of the oldest without a fate.
func (p *Pool[T, K]) full() bool {
	held := p.stats.InFlight + p.stats.Waiting + p.stats.Backoff
	return held >= p.o.QueueLength || p.ords.span() >= p.o.Window
}

// receive takes the source's next value.
func (p *Pool[T, K]) receive() (Delivery[T], error) {
	if p.acks != nil {
		return p.acks.Receive(p.readCtx)
	}
	v, err := p.src.Next(p.readCtx)
	return Delivery[T]{Value: v, Attempt: 1}, err
}

// accept places a value received behind its key, or, if it has none (it
// could not be decoded, or its key function panicked), dead-letters it;
// then it waits for room for the next value, and reports false once the
// Pool is stopped.
func (p *Pool[T, K]) accept(d Delivery[T]) bool {
	var k K
	failed := d.Err
	if failed == nil && p.key != nil {
		k, failed = p.keyOf(d.Value)
	}
	p.mu.Lock()
	e := entry[T]{v: d.Value, seq: d.Seq, ord: p.ords.add(), before: max(d.Attempt, 1) - 1}
	p.stats.Received++
	switch {
	case p.stopped:
		// Handed out as Shutdown began (a source's queued value wins over
		// the ended read): abandoned with the values that waited, since
		// no worker takes a value any more.
		p.stats.Abandoned++
		p.fateLocked(e.ord)
		p.mu.Unlock()
		return false
	case failed != nil:
		if d.Err != nil {
			p.stats.Poisoned++
		}
		p.stats.InFlight++
		p.mu.Unlock()
		p.giveUpAtOnce(k, e, failed)
		p.mu.Lock()
	default:
		l := p.laneLocked(k)
		l.vals.Push(e)
		p.stats.Waiting++
		if l.vals.Len() == 1 && !l.running && l.retryAt.IsZero() {
			p.readyLocked(l)
		}
	}
	ok := p.waitRoomLocked()
	p.mu.Unlock()
	return ok
}

// giveUpAtOnce dead-letters e, counted in flight, which no handler can
// take (failed says why), and gives it its fate: dead-lettered and marked
// done, or abandoned if the Pool's Shutdown runs out of time first.
func (p *Pool[T, K]) giveUpAtOnce(k K, e entry[T], failed error) {
	now := time.Now()
	f := Failure{Err: failed, Attempts: e.before, First: now, Last: now}
	stored := true
	for try := 1; !p.giveUp(k, e, f); try++ {
		if !p.pause(try) {
			stored = false
			break
		}
	}
	p.mu.Lock()
	p.stats.InFlight--
	if stored {
		p.stats.DeadLettered++
	} else {
		p.stats.Abandoned++
	}
	p.fateLocked(e.ord)
	p.mu.Unlock()
	if stored {
		p.done(e)
	}
}

// keyOf returns v's key, or the panic of the key function as an error.
func (p *Pool[T, K]) keyOf(v T) (k K, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handle: key function panicked: %v", r)
		}
	}()
	return p.key(v), nil
}

// laneLocked returns the lane of key k, made if it has none: a new lane
// for every value when there is no key function.
func (p *Pool[T, K]) laneLocked(k K) *lane[T, K] {
	if p.key != nil {
		if l, ok := p.keys[k]; ok {
			return l
		}
	}
	var l *lane[T, K]
	if n := len(p.free); n > 0 {
		l, p.free = p.free[n-1], p.free[:n-1]
	} else {
		l = &lane[T, K]{vals: ring.New[entry[T]](0), heapIdx: -1}
	}
	l.key = k
	if p.key != nil {
		p.keys[k] = l
	}
	return l
}

// clock returns the time of the supervisor's last tick (see tickEvery).
func (p *Pool[T, K]) clock() time.Time { return time.Unix(0, p.now.Load()) }

// readyLocked queues l for a worker and wakes one, unless one is looking
// for work already (see nextReadyLocked).
func (p *Pool[T, K]) readyLocked(l *lane[T, K]) {
	p.ready.Push(l)
	if p.spinning == 0 {
		wait.Signal(p.workers.WakeLocked())
	}
}

// errExhausted is the failure of a value whose source delivered it
// MaxAttempts times before (its readers died in its handler): it is
// dead-lettered without a handler.
var errExhausted = errors.New("handle: the value was handled Options.MaxAttempts times before, across its source's deliveries (a reader died in its handler): not handled again")

// maxRun is how many values of one key a worker handles in a row before
// it lets the key queue again behind the other ready keys.
const maxRun = 64

// work is a worker goroutine: it handles the head of one ready lane at a
// time, until Shutdown. It goes on with the same lane while that lane has
// values (up to maxRun in a row), which spares the ready queue and a
// wake-up per value.
func (p *Pool[T, K]) work() {
	var (
		l   *lane[T, K]
		e   entry[T]
		err error
		run int
		ctx = &valueCtx{Context: p.g.Aborting()} // made once, told each value
	)
	for {
		p.mu.Lock()
		if l != nil {
			var final bool
			if l, final = p.finishLocked(l, e, err, run < maxRun); final && p.acks != nil {
				// Marked done before anything else: the source may wait
				// for it to acknowledge, or to hand its position over.
				p.mu.Unlock()
				p.done(e)
				p.mu.Lock()
			}
			if l == nil {
				run = 0
			}
		}
		if l == nil {
			if l = p.nextReadyLocked(); l == nil {
				p.mu.Unlock()
				return
			}
		}
		e = p.startLocked(l)
		run++
		p.mu.Unlock()
		if e.before >= p.o.MaxAttempts {
			err = errExhausted // failed that often before: not handled again
		} else {
			ctx.seq, ctx.attempt = e.seq, e.before+l.tries+1
			err = p.call(ctx, e.v)
		}
	}
}

// spinTries is how many times a worker that found no ready lane yields
// and looks again before it parks; one worker at a time does.
const spinTries = 16

// nextReadyLocked waits for a ready lane and takes it; it returns nil once
// the Pool is stopped. Before it parks, one worker at a time yields and
// looks again a few times: with short handlers, the next value comes
// sooner than a parked worker wakes.
func (p *Pool[T, K]) nextReadyLocked() *lane[T, K] {
	if !p.stopped && p.ready.Len() == 0 && p.spinning == 0 {
		p.spinning++
		for range spinTries {
			p.mu.Unlock()
			runtime.Gosched()
			p.mu.Lock()
			if p.stopped || p.ready.Len() > 0 {
				break
			}
		}
		p.spinning--
	}
	for !p.stopped && p.ready.Len() == 0 {
		c := p.workers.ParkLocked()
		p.mu.Unlock()
		select {
		case <-c:
		case <-p.g.Stopping().Done():
		}
		p.mu.Lock()
		p.workers.UnparkLocked()
	}
	if p.stopped {
		return nil
	}
	l := p.ready.Pop()
	if p.ready.Len() > 0 {
		wait.Signal(p.workers.WakeLocked()) // the hand-off rule: work left for another
	}
	return l
}

// startLocked begins an attempt of l's head, and returns it.
func (p *Pool[T, K]) startLocked(l *lane[T, K]) entry[T] {
	e := l.vals.Peek()
	l.running = true
	if l.tries == 0 {
		// The supervisor's clock, not time.Now: a clock read costs as
		// much as the rest of a value's way through the Pool (see
		// BenchmarkEmptyHandler), and this one is right to a tick.
		l.first = p.clock()
		l.last = l.first
		p.busy.push(l)
	} else {
		p.stats.Retries++
		l.last = time.Now()
	}
	p.stats.Waiting--
	p.stats.InFlight++
	return e
}

// call runs the handler, turning a panic into an error.
func (p *Pool[T, K]) call(ctx context.Context, v T) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handle: handler panicked: %v", r)
			p.mu.Lock()
			p.stats.Panics++
			p.mu.Unlock()
			if n, due := p.logPanic.Add(time.Now(), 1); due {
				p.o.Logger.Warn("handle: handler panicked (handled as a failure)", slog.String("panic", fmt.Sprintf("%T", r)), slog.Uint64("count", n))
			}
		}
	}()
	return p.fn(ctx, v)
}

// finishLocked gives the head e of lane l its fate after an attempt that
// returned err: handled, a retry after a wait, or a dead letter (stored
// with the lock released). It returns the lane the worker goes on with
// (l again, if it holds more values and more allows it), and reports
// whether e's fate is final, to be marked done in its source.
func (p *Pool[T, K]) finishLocked(l *lane[T, K], e entry[T], err error, more bool) (*lane[T, K], bool) {
	if err != errExhausted {
		l.tries++
	}
	attempts := e.before + l.tries
	switch {
	case err == nil:
		return p.popLocked(l, e, &p.stats.Handled, more), true
	case p.stopped:
		p.popLocked(l, e, &p.stats.Abandoned, false)
		return nil, false
	case !errors.Is(err, ErrPermanent) && attempts < p.o.MaxAttempts:
		p.waitRetryLocked(l)
		return nil, false
	}
	f := Failure{Err: err, Attempts: attempts, First: l.first, Last: l.last}
	p.mu.Unlock()
	stored := p.giveUp(l.key, e, f)
	p.mu.Lock()
	switch {
	case stored:
		return p.popLocked(l, e, &p.stats.DeadLettered, more), true
	case p.stopped:
		p.popLocked(l, e, &p.stats.Abandoned, false)
	default:
		l.tries-- // the dead letter is tried again after a wait
		p.waitRetryLocked(l)
	}
	return nil, false
}

// waitRetryLocked makes l's head, just failed, wait out its retry.
func (p *Pool[T, K]) waitRetryLocked(l *lane[T, K]) {
	l.running = false
	p.stats.InFlight--
	p.stats.Backoff++
	l.retryAt = time.Now().Add(p.backoff(max(l.tries, 1)))
	if p.retry.push(l) {
		wait.Signal(p.wakeSup) // the earliest retry changed
	}
}

// popLocked removes l's head e, now fated (counted in *count), and
// releases the lane: to the caller if it holds more values and more is
// set, to the ready queue if it holds more, to the free list otherwise.
// It returns the lane if the caller goes on with it, nil otherwise.
func (p *Pool[T, K]) popLocked(l *lane[T, K], e entry[T], count *uint64, more bool) *lane[T, K] {
	l.vals.Pop()
	l.running, l.tries = false, 0
	p.busy.remove(l)
	p.stats.InFlight--
	*count++
	p.fateLocked(e.ord)
	switch {
	case l.vals.Len() > 0 && more:
		return l
	case l.vals.Len() > 0:
		p.readyLocked(l)
		return nil
	}
	if p.key != nil {
		delete(p.keys, l.key)
	}
	var zero K
	l.key = zero
	p.free = append(p.free, l)
	return nil
}

// fateLocked records that the value of order ord has its fate: the reader
// may have room, and Flush may return.
func (p *Pool[T, K]) fateLocked(ord uint64) {
	p.floor.Advance(p.ords.fate(ord))
	wait.Signal(p.reader.WakeLocked())
}

// done tells an AckSource that e has its fate (nothing for the zero
// entry).
func (p *Pool[T, K]) done(e entry[T]) {
	if p.acks != nil && e.seq != 0 {
		p.acks.Done(e.seq)
	}
}

// giveUp hands a dead letter to the source, if it keeps them, or to the
// Pool's dead-letter broadcaster, and reports whether it is stored. A
// failure to store it is logged; the caller tries again later.
func (p *Pool[T, K]) giveUp(k K, e entry[T], f Failure) bool {
	if n, due := p.logDead.Add(time.Now(), 1); due {
		p.o.Logger.Warn("handle: value dead-lettered", slog.Uint64("seq", e.seq), slog.Int("attempts", f.Attempts),
			slog.String("error", errorType(f.Err)), slog.Uint64("count", n))
	}
	ctx := p.g.Aborting()
	if p.sink != nil && e.seq != 0 {
		err := p.sink.DeadLetter(ctx, e.seq, f)
		if err == nil {
			return true
		}
		if !errors.Is(err, ErrNoDeadLetterSink) {
			p.o.Logger.Warn("handle: dead letter not stored: trying again", slog.Uint64("seq", e.seq), slog.String("error", err.Error()))
			return false
		}
	}
	if err := p.dead.Publish(ctx, DeadLetter[T, K]{Key: k, Value: e.v, Seq: e.seq, Failure: f}); err != nil {
		return false
	}
	// Stored once it is in the watcher's queue: a value published but
	// still waiting for room there is lost when Shutdown runs out of time.
	return p.dead.Flush(ctx) == nil
}

// errorType names an error by its Go type: its text may quote the value.
func errorType(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprintf("%T", err)
}

// pause waits before the next of tries to store a dead letter, and
// reports false if the Pool's Shutdown ran out of time meanwhile.
func (p *Pool[T, K]) pause(try int) bool {
	t := time.NewTimer(p.backoff(try))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.g.Aborting().Done():
		return false
	}
}
