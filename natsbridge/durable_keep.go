package natsbridge

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge/internal/lifecycle"
	"github.com/heraldgo/herald/natsbridge/internal/wait"
)

// The keeper of a durable watcher: one goroutine that holds the reader's
// turn and its record while its application works, however slowly.
//
// Its turn: the server pins the durable consumer to one reader and unpins
// it once that reader has sent no pull request for the takeover time. A
// reader whose application holds every value it was given (a long
// handler, a full Block queue) asks for nothing more, so the keeper sends,
// every third of the takeover time, a pull request that renews the pin and
// can take no message (no wait, a byte at most): a live reader keeps its
// turn; only a dead or stopped one hands over.
//
// Its record: beside the position, in the topic's key-value bucket
// (bucket herald_<stream>, key the durable's name), the reader that owns
// the position and the highest stream sequence any reader may have handed
// to its application (record.Handed). A reader hands out a value only up
// to its reservation, which it writes ahead of its application (about
// twice what it handed out in the last ackEvery, and at least
// minReservation), with a revision check: a reader that takes the position
// over reads the record, counts as redelivered the values up to Handed
// that come to it again (they may have been handed out before; those
// after it were only fetched ahead, and are not counted), and writes
// itself in as the owner. The reader it replaced, if alive, finds out at
// its next write (the revision moved) and stops handing out: it is
// fenced. So is a reader whose lease is about to end unrenewed.

const (
	// minReservation is the least a reader reserves at a time.
	minReservation = 4
	// maxReservation is the most a reader reserves at a time: the bound
	// on what Redelivered may count that no application saw.
	maxReservation = 4096
)

// errFenced tells a reader that another took its position over.
var errFenced = errors.New("natsbridge: another reader took the durable position over")

// keeper is a durable watcher's keeper. The feed calls activate and
// release; the application's goroutines call reserve; the keeper's
// goroutine renews the pin, extends the reservation and flushes acks.
type keeper struct {
	kv  jetstream.KeyValue
	key string
	me  string // this reader's name in the record, new at each takeover; "" before the first
	// pending is the name a takeover wrote whose answer did not come
	// (see activate), and pendingPrev the record it wrote over.
	pending     string
	pendingPrev record
	// refused is the lowest value the reader refused to hand out while
	// fenced (0: none), and resumeFrom where it reads on from once it
	// resumes: see reserveFenced.
	refused, resumeFrom uint64
	nc                  *nats.Conn
	next                string // the subject of the consumer's pull requests
	takeover            time.Duration
	acks                *acks
	log                 *limitedLog

	// reserved is the highest sequence this reader may hand out; soft
	// the sequence past which the keeper extends it ahead of need.
	reserved wait.Counter
	soft     atomic.Uint64
	want     atomic.Uint64 // the highest sequence the application waits to take
	fenced   atomic.Bool
	// fenceBy is fenceAt, in Unix nanoseconds, while this reader owns the
	// record (math.MaxInt64 otherwise): a hand-out checks it (see
	// leaseRanOut).
	fenceBy atomic.Int64
	wake    chan struct{} // capacity 1: the application needs more
	pin     atomic.Pointer[string]
	// unpin makes the consumer forget pin, if the server still pins it,
	// so that the next reader to ask is served: a reader whose lease ran
	// out gives its turn up so (see Topic.unpinIf).
	unpin func(ctx context.Context, pin string) error
	// remake returns the bucket of records made again if it is gone (see
	// remakeBucket); stale is the handle that failed.
	remake func(ctx context.Context, stale jetstream.KeyValue) (jetstream.KeyValue, error)
	// lost reports whether the record at key, not found, was lost (see
	// Topic.recordLost).
	lost func(ctx context.Context, key string) (bool, error)
	// notify, if not nil, is signalled when a value may be handed out
	// that could not be before: the reservation grew, or the gate opened
	// (a group member's readers, which do not wait: see tryReceive).
	notify chan struct{}
	gate   atomic.Pointer[chan struct{}] // see gateAt

	mu  sync.Mutex // guards rev, last, lastAt: the record's writes
	rev uint64     // the revision this reader last wrote; 0 before it owns the record
	// last is the highest sequence handed out when the reservation was
	// last extended, lastAt when: the rate the next one is sized by.
	last   uint64
	lastAt time.Time
	owned  bool
	// unpinDue is set while this reader, fenced because its lease ran
	// out, has not yet given its turn up (see unpin), and giveUp is the
	// pin it gives up: only that one, never a pin the server gave another
	// reader meanwhile.
	unpinDue bool
	giveUp   string
	// before is the highest sequence the record said was handed out when
	// this reader took it over: release never writes less.
	before uint64
	// fenceChange, made when someone waits for it (see holds), is closed
	// and cleared when the fence ends or reads close.
	fenceChange atomic.Pointer[chan struct{}]
	closedVoid  atomic.Bool  // see voidClosedTurn
	closedAt    atomic.Int64 // when reads closed (Unix nanoseconds), 0 before
	// closed is set once the watcher hands nothing more out (closeReads).
	closed atomic.Bool
	// floor and deaths are the record's when this reader took it over.
	floor  uint64
	deaths int
	// until is when this reader's lease ends (its last write's Until);
	// renewed, when it last renewed it; gate, while this reader waits
	// for the lease of the reader before it to end, is closed when it
	// may hand out, and gateAt is when.
	until   time.Time
	renewed time.Time
	gateAt  time.Time

	g *lifecycle.Group
}

func newKeeper(kv jetstream.KeyValue, key string, nc *nats.Conn, next string, takeover time.Duration, a *acks, log *limitedLog) *keeper {
	k := &keeper{
		kv: kv, key: key, nc: nc, next: next, takeover: takeover,
		acks: a, log: log, wake: make(chan struct{}, 1), g: lifecycle.New(),
	}
	k.fenceBy.Store(math.MaxInt64)
	return k
}

// start runs the keeper's goroutine until stop.
func (k *keeper) start() { k.g.Go(k.run) }

// closeReads makes readers waiting for a reservation return ErrClosed,
// and every later reserve too: the watcher hands nothing more out. The
// keeper goes on renewing the pin until stop. It does not wait for mu: a
// write of the record holds it until the server answers, or the write's
// own bound (resumeTimeout) with the server gone, and a Shutdown is
// bounded by its ctx.
func (k *keeper) closeReads() {
	k.closedAt.CompareAndSwap(0, time.Now().UnixNano())
	k.closed.Store(true)
	k.openGate()
	k.reserved.End()
	k.fenceChangedLocked() // those waiting in holds hold their values now
}

// openGate opens the gate, if one is set: readers may hand out again.
func (k *keeper) openGate() {
	if g := k.gate.Swap(nil); g != nil {
		close(*g)
	}
}

// reopenLocked lets readers wait for a reservation again, unless the
// watcher hands nothing more out (closeReads may end the reads
// meanwhile: it does not take mu).
func (k *keeper) reopenLocked() {
	if k.closed.Load() {
		return
	}
	k.reserved.Reopen()
	if k.closed.Load() {
		k.reserved.End()
	}
}

// stop ends the keeper's goroutine and returns once it has exited.
func (k *keeper) stop() {
	k.closeReads()
	_ = k.g.Shutdown(context.Background())
}

func (k *keeper) run() {
	tick := time.NewTicker(ackEvery)
	defer tick.Stop()
	pingEvery := max(k.takeover/3, ackEvery)
	pinged := time.Now()
	for {
		select {
		case <-k.g.Stopping().Done():
			return
		case <-k.wake:
		case now := <-tick.C:
			k.acks.flush(false)
			if now.Sub(pinged) >= pingEvery {
				pinged = now
				k.mu.Lock()
				ctx, cancel := k.callCtxLocked()
				k.mu.Unlock()
				_, _ = k.ping(ctx) // renews the pin, or learns it is another's
				cancel()
			}
			k.lease(time.Now()) // not the tick's: a call above may have taken a while
		}
		k.extend()
	}
}

// setPin records the pin under which the consumer serves this reader, ""
// when it stands by.
func (k *keeper) setPin(pin string) { k.pin.Store(&pin) }

// ping renews this reader's pin with a pull request that can take no
// message, and reports whether the server pins this reader (false, with
// no error, when it holds no pin), or the error if the server did not
// answer. An answer that the pin is not this reader's makes the reader
// stand by... the feed learns it from the next message or its idle check.
func (k *keeper) ping(ctx context.Context) (bool, error) {
	p := k.pin.Load()
	if p == nil || *p == "" {
		return false, nil
	}
	mine, err := pingPin(ctx, k.nc, k.next, *p)
	if err == nil && !mine {
		// Unless the feed took the position over under a new pin
		// meanwhile: a keeper that knows no pin gives nothing up.
		k.pin.CompareAndSwap(p, new(string))
	}
	return mine, err
}

// reserve returns once this reader may hand out the value at seq, or
// errFenced while it is fenced (another reader owns the position, or its
// lease ran out: see reserveFenced), or ErrClosed once the watcher hands
// nothing more out, or ctx.Err().
func (k *keeper) reserve(ctx context.Context, seq uint64) error {
	if g := k.gate.Load(); g != nil {
		select {
		case <-*g:
		default:
			select {
			case <-*g:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	if seq > k.soft.Load() {
		if k.want.Load() < seq {
			k.want.Store(seq)
		}
		wait.Signal(k.wake)
	}
	for {
		if k.fenced.Load() {
			if decided, err := k.reserveFenced(seq); decided {
				return err
			}
			continue // unfenced meanwhile
		}
		if seq > k.reserved.Load() {
			err := k.reserved.Wait(ctx, seq)
			switch {
			case err == nil:
			case errors.Is(err, wait.ErrEnded) && k.isClosed():
				return ErrClosed
			case errors.Is(err, wait.ErrEnded):
				continue // fenced
			default:
				return err
			}
		}
		if k.leaseRanOut() {
			continue // fenced now
		}
		return nil
	}
}

// reserveFenced decides, for a fenced reader, whether it may hand out the
// value at seq: not even within its reservation, so that it stops before
// the lease it could not renew ends, or at once when another reader took
// the position over; only a value below where it reads on from once it
// resumes (see resumeAt), which it took before and which does not come
// again. It keeps the lowest value it refused, for that resume. It
// reports false if the reader is no longer fenced.
func (k *keeper) reserveFenced(seq uint64) (decided bool, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case !k.fenced.Load():
		return false, nil
	case k.closed.Load():
		return true, ErrClosed
	case seq < k.resumeFrom:
		return true, nil
	}
	if k.refused == 0 || seq < k.refused {
		k.refused = seq
	}
	return true, errFenced
}

// resumeAt returns where a reader that resumed (see activate) reads on
// from: from, or the lowest value it refused while fenced if that is
// lower. Until it is unfenced, it hands out a value below that if asked
// (see reserveFenced).
func (k *keeper) resumeAt(from uint64) uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.refused != 0 {
		from = min(from, k.refused)
	}
	k.resumeFrom = from
	return from
}

func (k *keeper) isClosed() bool { return k.closed.Load() }

// extend writes a larger reservation if the application needs one soon:
// the highest sequence it waits for, or what it handed out, plus about
// twice what it handed out since the last extension (per ackEvery).
func (k *keeper) extend() {
	want := max(k.want.Load(), k.acks.top())
	if want <= k.soft.Load() || k.fenced.Load() {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.owned || k.closed.Load() {
		return
	}
	now := time.Now()
	rate := uint64(0)
	if el := now.Sub(k.lastAt); el > 0 && want > k.last {
		rate = (want - k.last) * uint64(ackEvery) / uint64(max(el, ackEvery))
	}
	size := min(max(2*rate, minReservation), maxReservation)
	target := want + size
	ctx, cancel := k.callCtxLocked()
	until := now.Add(k.takeover)
	defer cancel()
	rev, err := k.write(ctx, record{Owner: k.me, Handed: target, Floor: k.floor, Deaths: k.deaths, Until: until.UnixNano()}, k.rev)
	switch {
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyNotFound):
		k.refusedLocked(ctx)
		return
	case err != nil:
		k.log.warn("natsbridge: durable record not written: retrying", errAttr(err))
		return
	}
	k.rev, k.last, k.lastAt = rev, want, now
	k.setUntilLocked(until, now)
	k.reserved.Advance(target)
	k.soft.Store(target - size/2)
	k.signal()
}

// signal tells a reader that does not wait that a value may be handed
// out now.
func (k *keeper) signal() {
	if k.notify != nil {
		wait.Signal(k.notify)
	}
}

// fenceLocked stops this reader handing out values: another owns the
// position, or its lease ran out.
func (k *keeper) fenceLocked(why string) {
	k.owned = false
	k.fenceBy.Store(math.MaxInt64)
	k.fenced.Store(true)
	k.reserved.End()
	k.log.change("natsbridge: durable position "+why+": this reader stops handing out", slog.Uint64("reserved", k.reserved.Load()))
}

// attemptsBefore returns how many readers died with the value at seq
// before they finished it, as the record says: the value after the floor
// at which this reader took the position over.
func (k *keeper) attemptsBefore(seq uint64) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if seq == k.floor+1 {
		return k.deaths
	}
	return 0
}
