package handle

import (
	"math/bits"
	"runtime"

	"github.com/heraldgo/herald/internal/wait"
)

// spinTries is how many times a worker that found no ready lane yields
// and looks again before it parks; one worker at a time does.
const spinTries = 16

// find returns a ready lane, begun, its shard and its head, for worker
// i: of shard own first (its own, or a starved one), then of
// the others (a slow key holds only
// its lane, never a shard). While there is none, one worker at a time
// yields and looks again a few times (with short handlers, the next
// value comes sooner than a parked worker wakes), then it parks. It
// returns a nil lane once the Pool is stopped.
func (p *Pool[T, K]) find(i, own int) (*shard[T, K], *lane[T, K], *entry[T]) {
	for !p.stopped.Load() {
		if s, l, e := p.scan(i, own); l != nil {
			return s, l, e
		}
		if p.spinning.CompareAndSwap(0, 1) {
			s, l, e := p.spin(i, own)
			p.spinning.Store(0)
			if l != nil {
				p.handOff(s)
				return s, l, e
			}
		}
		w, bit := &p.parked[i/64], uint64(1)<<(i%64)
		w.Or(bit)
		if p.anyWork() && w.And(^bit)&bit != 0 {
			continue // work came as it parked, and no waker took its bit
		}
		// Parked: a waker clears the bit, then signals.
		select {
		case <-p.wake[i]:
		case <-p.g.Stopping().Done():
		}
	}
	return nil, nil, nil
}

// spin yields and looks for a ready lane a few times, for the spinning
// worker i.
func (p *Pool[T, K]) spin(i, own int) (*shard[T, K], *lane[T, K], *entry[T]) {
	for range spinTries {
		runtime.Gosched()
		if s, l, e := p.take(i, own); l != nil {
			return s, l, e
		}
	}
	return nil, nil, nil
}

// handOff wakes a parked worker if work is left after a worker took a
// lane from s (the hand-off rule): each woken worker that takes one
// wakes the next, while there is work.
func (p *Pool[T, K]) handOff(s *shard[T, K]) {
	if s.hasWork.Load() || p.anyWork() {
		p.wakeOne(-1)
	}
}

// anyWork reports whether a shard holds a value or a lane for a worker.
func (p *Pool[T, K]) anyWork() bool {
	for _, s := range p.shards {
		if s.hasWork.Load() {
			return true
		}
	}
	return false
}

// scan takes a ready lane for worker i, as take does, and hands off the
// work left.
func (p *Pool[T, K]) scan(i, own int) (*shard[T, K], *lane[T, K], *entry[T]) {
	s, l, e := p.take(i, own)
	if l != nil {
		p.handOff(s)
	}
	return s, l, e
}

// take takes a ready lane of the first shard that has one, from own on,
// and begins its head for worker i.
func (p *Pool[T, K]) take(i, own int) (*shard[T, K], *lane[T, K], *entry[T]) {
	for j := range p.shards {
		s := p.shards[(own+j)&int(p.mask)]
		if !s.hasWork.Load() {
			continue
		}
		s.mu.Lock()
		l := s.takeLocked(p)
		if l == nil {
			s.mu.Unlock()
			continue
		}
		s.held[i] = l
		e := s.startLocked(p, l)
		mixed, nMixed := s.mixed, s.mixedN
		s.mixedN = 0
		s.mu.Unlock()
		if nMixed > 0 {
			p.warnMixed(mixed, nMixed)
		}
		return s, l, e
	}
	return nil, nil, nil
}

// wakeOne wakes a parked worker, worker pref if it is parked, unless one
// is spinning already: it will find the work.
func (p *Pool[T, K]) wakeOne(pref int) {
	if p.spinning.Load() > 0 {
		return
	}
	if pref >= 0 && pref < len(p.wake) && p.unpark(pref/64, uint64(1)<<(pref%64)) {
		wait.Signal(p.wake[pref])
		return
	}
	for wi := range p.parked {
		w := &p.parked[wi]
		for m := w.Load(); m != 0; m = w.Load() {
			bit := uint64(1) << bits.TrailingZeros64(m)
			if w.CompareAndSwap(m, m&^bit) {
				wait.Signal(p.wake[wi*64+bits.TrailingZeros64(bit)])
				return
			}
		}
	}
}

// unpark clears bit of parked word wi if it is set, and reports whether
// it did: the caller then signals that worker.
func (p *Pool[T, K]) unpark(wi int, bit uint64) bool {
	w := &p.parked[wi]
	for m := w.Load(); m&bit != 0; m = w.Load() {
		if w.CompareAndSwap(m, m&^bit) {
			return true
		}
	}
	return false
}

// wakeAll wakes every parked worker (for Shutdown).
func (p *Pool[T, K]) wakeAll() {
	for i := range p.wake {
		if p.unpark(i/64, uint64(1)<<(i%64)) {
			wait.Signal(p.wake[i])
		}
	}
}
