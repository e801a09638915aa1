package handle

import (
	"context"
	"hash/maphash"
	"math/bits"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/internal/burst"
	"github.com/heraldgo/herald/internal/lifecycle"
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
//
// Inside, the keys are spread over shards by their hash, each with its
// own mutex, lanes and counts (see shard): the reader hands each shard
// its values once per batch, and workers meet on a lock only when they
// take work of the same shard.
type Pool[T any, K comparable] struct {
	src   Source[T]
	acks  AckSource[T]      // src, if it is one
	sink  DeadLetterSink    // src, if it is one
	parts PartitionedSource // src, if it is one
	turns TurnSource        // src, if it is one
	key   func(T) K         // nil: every value is its own key
	fn    Func[T]
	o     Options
	dead  *broadcast.Broadcaster[DeadLetter[T, K]]
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
	// deadTurn, of capacity 1, is held by the worker storing a dead
	// letter in dead: another's Publish between its Publish and Flush
	// would hold its Flush too (see giveUp).
	deadTurn chan struct{}
	// batches is src, if it reads in batches (a broadcast.Watcher).
	batches batchReader[T]
	// The reader's: its buffers, and the order the next value received
	// gets.
	keyBuf []keyed[K]
	valBuf []T
	// resume is the rest of a receive whose key function called
	// runtime.Goexit, for the reader that goes on; batchErr the error of
	// the batch it took. The reader's.
	resume   func() (int, error)
	batchErr error
	bufs     [][]placing[T, K]
	next     uint64
	roomLeft int  // room, as last found (see waitRoom)
	pausedR  bool // paused, as last stored
	// backlogBase is how many values had left the source's queue (read
	// by another) when the Pool took it over: Flush's target from the
	// source's Backlog counts from there.
	backlogBase uint64
	shutBegun   atomic.Bool
	shutDone    chan struct{} // closed once the first Shutdown returned
	shutErr     error

	logPanic, logDead, logSlow, logMixed, logStopped burst.Burst

	seed      maphash.Seed
	shards    []*shard[T, K]
	mask      uint64 // len(shards)-1: a power of two
	idleLanes int    // how many idle lanes a shard keeps (see popLocked)
	wake      []chan struct{}
	// readerWake, of capacity 1, wakes the reader waiting for room.
	readerWake chan struct{}

	_ [64]byte
	// received: the values of every order below it were handed to their
	// shards. taken: the reader took them from the source, and is handing
	// them on (Flush's target: a value counted in a shard's Received, even
	// in a handler, before the reader has handed on the rest of its batch
	// is below it).
	received atomic.Uint64
	taken    atomic.Uint64
	_        [56]byte
	// parked has a bit for each worker parked on its wake channel.
	parked []atomic.Uint64
	// spinning counts the workers that look for a ready lane a few times
	// before they park: work made ready meanwhile needs no wake-up.
	spinning atomic.Int32
	_        [60]byte
	rParked  atomic.Bool // the reader waits for room
	// starved has a bit for each shard whose first ready value waited a
	// whole tick for a worker (see findStarved).
	starved atomic.Uint64
	// stopped: Shutdown began. Stored with every shard locked: read under
	// any shard's lock, it is the same for all of them.
	stopped atomic.Bool
	_       [62]byte
	floor   wait.Counter // every value received before this order has its fate

	mu        sync.Mutex // guards the fields below; taken before a shard's
	paused    bool       // the reader waits for room
	pauses    uint64
	readErr   error // why reading ended
	readEnded bool  // the reader has returned
	// unsure holds the values, counted in flight, whose dead letter was
	// published to dead but not seen in DeadLetters' queue when the
	// Pool's Shutdown ran out of time: dead's Shutdown places it there,
	// or drops it for want of room. settleLocked counts them once it has
	// (deadShut).
	unsure   []unsureLetter[T, K]
	deadShut bool
}

// unsureLetter is a value whose dead letter is unsure (see Pool.unsure):
// the value and its shard, and how many dead letters DeadLetters had
// queued before it was published.
type unsureLetter[T any, K comparable] struct {
	s      *shard[T, K]
	e      entry[T]
	before uint64
}

// entry is a value in the Pool: its receive order and its index in its
// shard's record of fates, its source's sequence, and the attempts its
// source counted before this delivery.
type entry[T any] struct {
	v      T
	seq    uint64
	ord    uint64
	idx    uint64
	turn   uint64 // its source's turn when handed out (see TurnSource)
	before int
}

// lane is one key's values, in order; only its head is handled, by one
// worker at a time. A keyed lane stays in its shard's table, idle, after
// its last value, until sweepIdleLocked frees it.
type lane[T any, K comparable] struct {
	key     K
	h       uint64 // the key's hash (see laneTable)
	vals    vals[T]
	running bool      // a worker holds the head
	mapped  bool      // the lane is in its shard's table, by its key
	retryAt time.Time // the head waits out a retry until then; zero if not
	heapIdx int       // the lane's place in the retry heap, -1 if none
	part    int       // the partition of its values, from a PartitionedSource
	// The head's attempts in this Pool, when its first and last began,
	// and when the key was last logged as slow.
	tries       int
	first, last int64 // UnixNano
	logged      time.Time
	// dead is the head's dead letter when storing it failed: it is stored
	// again after a wait, and the head is not handled again.
	dead *Failure
	// begun is the receive order of the head when its first attempt
	// began: with first, it orders the lanes by when their head began
	// (see began).
	begun uint64
	// prev and next link the lane in its shard's failed list once its head
	// failed; inFailed says whether it is there.
	prev, next *lane[T, K]
	inFailed   bool
}

// isNil reports whether src is nil, or holds a nil pointer (or map,
// slice, func, chan): a zero struct is a Source as good as another.
func isNil[T any](src Source[T]) bool {
	if src == nil {
		return true
	}
	switch v := reflect.ValueOf(src); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	return false
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
	if isNil(src) {
		panic("handle: nil Source")
	}
	if fn == nil {
		panic("handle: nil Func")
	}
	o = o.resolved()
	n := shardsFor(o.Workers)
	p := &Pool[T, K]{
		src:        src,
		key:        key,
		fn:         fn,
		o:          o,
		dead:       broadcast.New[DeadLetter[T, K]](broadcast.Options{QueueLength: o.DeadLetterQueue, IncomingQueueLength: 1}),
		g:          lifecycle.New(),
		wakeSup:    make(chan struct{}, 1),
		deadTurn:   make(chan struct{}, 1),
		seed:       maphash.MakeSeed(),
		mask:       uint64(n - 1),
		idleLanes:  max(idleLanes, o.QueueLength)/n + 1,
		bufs:       make([][]placing[T, K], n),
		wake:       make([]chan struct{}, o.Workers),
		readerWake: make(chan struct{}, 1),
		shutDone:   make(chan struct{}),
		parked:     make([]atomic.Uint64, (o.Workers+63)/64),
	}
	for i := range n {
		p.shards = append(p.shards, newShard[T, K](i, o.Workers))
	}
	for i := range p.wake {
		p.wake[i] = make(chan struct{}, 1)
	}
	p.now.Store(time.Now().UnixNano())
	p.acks, _ = src.(AckSource[T])
	p.parts, _ = src.(PartitionedSource)
	p.turns, _ = src.(TurnSource)
	p.sink, _ = src.(DeadLetterSink)
	p.batches, _ = src.(batchReader[T])
	p.backlogBase = readBefore(src)
	p.deadW, _ = p.dead.Watch() // a new broadcaster: it cannot refuse
	p.readCtx, p.stopRead = context.WithCancel(context.Background())
	p.readOver, p.endRead = context.WithCancel(context.Background())
	p.g.Go(p.read)
	p.g.Go(p.supervise)
	for i := range o.Workers {
		p.g.Go(func() { p.work(i) })
	}
	return p
}

// readBefore returns how many values had left src's queue (read by
// another) when the Pool took it over, for a source with a Backlog.
func readBefore[T any](src Source[T]) uint64 {
	b, ok := src.(interface{ Backlog() broadcast.Backlog })
	if !ok {
		return 0
	}
	bl := b.Backlog()
	return bl.Entered - min(uint64(bl.Queued), bl.Entered)
}

// maxShards bounds a Pool's shards: past it, more shards only make
// Stats and Shutdown, which lock them all, slower.
const maxShards = 16

// shardsFor returns how many shards a Pool of that many workers has: a
// power of two, at most one per worker (each has an owner, whose worker
// looks at it first) and maxShards.
func shardsFor(workers int) int {
	return 1 << (bits.Len(uint(min(workers, maxShards))) - 1)
}

// DeadLetters returns the watcher of the Pool's dead letters: every value
// it gives up on, with its key and why, unless its source keeps them (see
// DeadLetterSink). It was registered when the Pool was made, so it misses
// none. It is a Block watcher of Options.DeadLetterQueue values: a worker
// that gives a value up waits for room, so read it; do not Stop it: a
// dead letter counts only once it is in the queue, and those given up
// after a Stop wait, their keys held (and the reading, for a value its
// source could not decode), until a Shutdown abandons them. It
// closes once the Pool has shut down and its last dead letter was read. A
// dead letter still waiting for room when Shutdown runs out of time is
// counted DeadLettered if it reaches the queue after all, Abandoned if it
// is dropped; in either case its value is not marked done in an
// AckSource, so a durable source hands it out again.
func (p *Pool[T, K]) DeadLetters() *broadcast.Watcher[DeadLetter[T, K]] { return p.deadW }

// giveUpAtOnce dead-letters e, counted in flight in shard s, which no
// handler can take (failed says why), and gives it its fate:
// dead-lettered and marked done, or abandoned if the Pool's Shutdown runs
// out of time first.
func (p *Pool[T, K]) giveUpAtOnce(s *shard[T, K], k K, e *entry[T], failed error) {
	now := time.Now()
	f := Failure{Err: failed, Attempts: e.before, First: now, Last: now}
	r, before := p.giveUp(k, e, f)
	for try := 1; r == notStored && p.pause(try); try++ {
		r, before = p.giveUp(k, e, f)
	}
	if r == stored {
		p.done(e) // before it is counted: a Flush that returns has told the source
	}
	if r == unconfirmed {
		p.keepUnsure(s, e, before)
		return
	}
	count := &s.stats.DeadLettered
	if r != stored {
		count = &s.stats.Abandoned
	}
	s.mu.Lock()
	n := s.countLocked(p, e, count)
	s.mu.Unlock()
	p.afterFate(n)
}

// afterFate, once the lock of the shard where a value got its fate is
// released, moves the Pool's floor if that shard held it, and wakes the
// reader if it waits for room.
func (p *Pool[T, K]) afterFate(n fateNote) {
	if n.moved && n.old <= p.floor.Load() {
		p.raiseFloor()
	}
	p.wakeReader()
}

// raiseFloor sets the Pool's floor to the least of the orders received
// and the shards' floors, until it stands still: a shard whose floor
// moved while this one read it, and that did not raise the floor itself
// (it saw another shard hold it), is seen by the next pass.
func (p *Pool[T, K]) raiseFloor() {
	var prev uint64
	for {
		m := p.received.Load()
		for _, s := range p.shards {
			m = min(m, s.floor.Load())
		}
		if m <= prev {
			return
		}
		p.floor.Advance(m)
		prev = m
	}
}

// done tells an AckSource that e has its fate (nothing for the zero
// entry).
func (p *Pool[T, K]) done(e *entry[T]) {
	switch {
	case e.seq == 0:
	case p.turns != nil:
		p.turns.DoneTurn(e.seq, e.turn)
	case p.acks != nil:
		p.acks.Done(e.seq)
	}
}
