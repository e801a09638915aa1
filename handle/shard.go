package handle

import (
	"sync"
	"sync/atomic"

	"github.com/heraldgo/herald/internal/ring"
)

// shard holds the values whose keys hash to it, under its own mutex: a
// Pool's workers handle the keys of different shards without meeting on a
// lock. The reader appends what it received to a shard's inbox (one lock
// a batch); a worker under the lock places the inbox behind the keys and
// takes a ready lane. A worker looks at its own shard first, then at the
// others.
type shard[T any, K comparable] struct {
	mu sync.Mutex
	// inbox holds the values received and not yet placed behind their
	// keys (counted Waiting); spare is the next inbox's buffer.
	inbox, spare []placing[T, K]
	keys         laneTable[T, K]
	ready        ring.Ring[*lane[T, K]] // lanes whose head waits for a worker
	free         []*lane[T, K]
	idle         int // lanes in keys that hold no value (see popLocked)
	// held[i] is the lane of this shard worker i holds (its head in a
	// handler, or its dead letter being stored), nil if none; failed lists
	// the lanes whose head failed, until it has its fate. Together: the
	// lanes whose head has begun (see eachBegunLocked).
	held   []*lane[T, K]
	failed laneList[T, K]
	retry  retryHeap[T, K]
	rec    fateRec
	// stats counts the shard's values (Received … Mixed); the Pool's
	// Stats sums its shards'.
	stats  Stats[K]
	fatedN uint64 // values here with a fate
	// fatedPub is fatedN as last stored in fated.
	fatedPub uint64
	// mixed is a key that joined two partitions' values, to be logged
	// once the lock is released (see placeLocked); mixedN how many.
	mixed  K
	mixedN int
	work   bool // hasWork, as last stored
	idx    int  // its place in Pool.shards
	// front is the receive order of the value at the head of the first
	// ready lane, or in the inbox, at the supervisor's last tick (see
	// Pool.findStarved).
	front uint64

	// Read without the lock: stored under it.
	hasWork atomic.Bool   // the inbox or ready holds a lane or value
	floor   atomic.Uint64 // rec.oldest()
	fated   atomic.Uint64 // fatedN, published (see fateLocked)
	_       [64]byte      // no false sharing with the next shard
}

// newShard returns shard i of a Pool of that many workers.
func newShard[T any, K comparable](i, workers int) *shard[T, K] {
	s := &shard[T, K]{ready: ring.New[*lane[T, K]](0), held: make([]*lane[T, K], workers), idx: i, front: noOrd}
	s.floor.Store(noOrd)
	return s
}

// placing is a value received, not yet placed behind its key.
type placing[T any, K comparable] struct {
	e entry[T]
	k K
	h uint64 // k's hash
}

// noteLocked stores hasWork, after the inbox or the ready lanes changed:
// only if it changed (a store costs as much as a few of the shard's
// steps).
func (s *shard[T, K]) noteLocked() {
	if w := s.ready.Len() > 0 || len(s.inbox) > 0; s.work != w {
		s.work = w
		s.hasWork.Store(w)
	}
}

// frontLocked returns the receive order of the value at the head of the
// first ready lane, or else the first in the inbox, or noOrd.
func (s *shard[T, K]) frontLocked() uint64 {
	switch {
	case s.ready.Len() > 0:
		return s.ready.Peek().vals.Head().ord
	case len(s.inbox) > 0:
		return s.inbox[0].e.ord
	}
	return noOrd
}

// placeLocked moves the inbox behind the values' keys, and makes each
// lane that was empty ready.
func (s *shard[T, K]) placeLocked(p *Pool[T, K]) {
	in := s.inbox
	s.inbox = s.spare[:0]
	for i := range in {
		l := s.laneLocked(p, in[i].k, in[i].h)
		if p.parts != nil {
			prev := l.part
			l.part = p.parts.PartitionOf(in[i].e.seq)
			if l.vals.Len() > 0 && prev != l.part {
				s.stats.Mixed++
				s.mixed, s.mixedN = in[i].k, s.mixedN+1
			}
		}
		l.vals.Push(in[i].e)
		if l.vals.Len() == 1 && !l.running && l.retryAt.IsZero() {
			s.ready.Push(l)
		}
	}
	clear(in)
	s.spare = in[:0]
}

// laneLocked returns the lane of key k, made if it has none: a new lane
// for every value when there is no key function, or its key is not equal
// to itself (a NaN: no lookup finds it, so each is its own key, in no
// table).
func (s *shard[T, K]) laneLocked(p *Pool[T, K], k K, h uint64) *lane[T, K] {
	mapped := p.key != nil && k == k
	if mapped {
		if l := s.keys.find(h, k); l != nil {
			if l.vals.Len() == 0 && !l.running {
				s.idle-- // idle no more
			}
			return l
		}
	}
	var l *lane[T, K]
	if n := len(s.free); n > 0 {
		l, s.free = s.free[n-1], s.free[:n-1]
	} else {
		l = &lane[T, K]{heapIdx: -1}
	}
	l.key, l.h, l.dead, l.mapped = k, h, nil, mapped
	if mapped {
		s.keys.add(l)
	}
	return l
}

// takeLocked returns a ready lane, or nil if there is none or the Pool
// is stopped.
func (s *shard[T, K]) takeLocked(p *Pool[T, K]) *lane[T, K] {
	if p.stopped.Load() {
		return nil
	}
	if len(s.inbox) > 0 {
		s.placeLocked(p)
	}
	if s.ready.Len() == 0 {
		s.noteLocked()
		return nil
	}
	l := s.ready.Pop()
	s.noteLocked()
	if bit := uint64(1) << s.idx; p.starved.Load()&bit != 0 {
		p.starved.And(^bit) // a worker came: it stays (see Pool.finish)
	}
	return l
}

// readyLocked queues l for a worker: the caller takes it, or wakes one.
func (s *shard[T, K]) readyLocked(l *lane[T, K]) {
	s.ready.Push(l)
	s.noteLocked()
}

// empty reports whether the shard holds no value without a fate.
func (s *shard[T, K]) empty() bool {
	return s.stats.InFlight+s.stats.Waiting+s.stats.Backoff == 0
}

// fatedEvery is how many fates a shard counts before it publishes them
// for the reader's room; it publishes at once when it empties, and when
// the reader waits for room.
const fatedEvery = 16

// fateLocked records that the value e has its fate: it publishes the
// shard's count of fates when due, and moves the shard's floor. It
// returns what the caller does once the lock is released (see
// Pool.afterFate).
func (s *shard[T, K]) fateLocked(p *Pool[T, K], e *entry[T]) fateNote {
	s.fatedN++
	if s.fatedN-s.fatedPub >= fatedEvery || s.empty() || p.rParked.Load() {
		s.publishLocked()
	}
	if !s.rec.fate(e.idx) {
		return fateNote{}
	}
	old := s.floor.Load()
	s.floor.Store(s.rec.oldest())
	return fateNote{moved: true, old: old}
}

// publishLocked stores the shard's count of fates for the reader.
func (s *shard[T, K]) publishLocked() {
	s.fatedPub = s.fatedN
	s.fated.Store(s.fatedN)
}

// fateNote is what a fate leaves to do once its shard's lock is released:
// if the shard's floor moved from old, the Pool's floor may move too.
type fateNote struct {
	moved bool
	old   uint64
}

// add merges n into a, for a caller that gives several values a fate,
// in one shard or several: the least floor before.
func (a fateNote) add(n fateNote) fateNote {
	switch {
	case !a.moved:
		return n
	case n.moved:
		a.old = min(a.old, n.old)
	}
	return a
}

// countLocked gives the value e, counted in flight, its fate, counted in
// *count; a nil count leaves it in flight, for Pool.keepUnsure (see storeDeadLocked).
func (s *shard[T, K]) countLocked(p *Pool[T, K], e *entry[T], count *uint64) fateNote {
	if count == nil {
		return fateNote{}
	}
	s.stats.InFlight--
	*count++
	return s.fateLocked(p, e)
}

// popLocked removes l's head e, now fated (counted by countLocked), and
// releases the lane: to the caller if it holds more values and more is
// set, to the ready queue if it holds more, to the free list otherwise.
// It returns the lane if the caller goes on with it, nil otherwise.
func (s *shard[T, K]) popLocked(p *Pool[T, K], l *lane[T, K], e *entry[T], count *uint64, more bool) (*lane[T, K], fateNote) {
	n := s.countLocked(p, e, count) // before the pop: e may be the head
	l.vals.Pop()
	l.running, l.tries, l.dead = false, 0, nil
	s.failed.remove(l)
	switch {
	case l.vals.Len() > 0 && more:
		return l, n
	case l.vals.Len() > 0:
		s.readyLocked(l)
		return nil, n
	}
	if !l.mapped {
		if len(s.free) < p.idleLanes {
			s.free = append(s.free, l)
		}
		return nil, n
	}
	// The key's lane stays, idle, for its next value: a key seen again
	// soon costs no table write. Idle lanes are swept once they are many.
	s.idle++
	if s.idle > p.idleLanes {
		s.sweepIdleLocked(p)
	}
	return nil, n
}

// idleLanes is how many idle lanes a Pool keeps, at least, before it
// sweeps them (over its shards): at most one sweep of a shard's table per
// its share of that many of its values. A sweep costs a table write for
// each key seen again: a shard's share must hold the keys a busy Pool
// sees over and over (BenchmarkEmptyHandler's 1 000 over 16 shards).
const idleLanes = 4096

// sweepIdleLocked frees the lanes that hold no value.
func (s *shard[T, K]) sweepIdleLocked(p *Pool[T, K]) {
	var zero K
	s.keys.keep(func(l *lane[T, K]) bool {
		if l.vals.Len() > 0 || l.running {
			return true
		}
		l.key = zero
		if len(s.free) < p.idleLanes {
			s.free = append(s.free, l)
		}
		return false
	})
	s.idle = 0
}
