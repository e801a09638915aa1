package handle

import (
	"container/heap"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"
)

// backoff returns the wait before the retry that follows the tries-th
// failure: RetryMin, doubled for each failure before, at most RetryMax,
// drawn at random between half and all of it (jitter, so that values that
// failed together are not retried together).
func (p *Pool[T, K]) backoff(tries int) time.Duration {
	d := p.o.RetryMin
	for i := 1; i < tries && d < p.o.RetryMax; i++ {
		d *= 2
	}
	d = min(d, p.o.RetryMax)
	return d/2 + rand.N(d/2+1)
}

// attempts returns how many times l's head was handled, across its
// source's deliveries, the attempt running now included.
func (l *lane[T, K]) attempts() int {
	n := l.vals.Head().before + l.tries
	if l.running {
		n++
	}
	return n
}

// began is when a lane's head began its first attempt: the supervisor's
// clock (UnixNano, to within a tick), then its receive order.
type began struct {
	at  int64
	ord uint64
}

func (a began) before(b began) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.ord < b.ord
}

// since returns when l's head began its first attempt.
func (l *lane[T, K]) since() began { return began{l.first, l.begun} }

// laneList is a list of lanes, linked through them (shard.failed).
type laneList[T any, K comparable] struct{ head, tail *lane[T, K] }

// push adds l at the end, unless it is in the list already.
func (b *laneList[T, K]) push(l *lane[T, K]) {
	if l.inFailed {
		return
	}
	l.prev, l.next, l.inFailed = b.tail, nil, true
	if b.tail != nil {
		b.tail.next = l
	} else {
		b.head = l
	}
	b.tail = l
}

func (b *laneList[T, K]) remove(l *lane[T, K]) {
	if !l.inFailed {
		return
	}
	if l.prev != nil {
		l.prev.next = l.next
	} else {
		b.head = l.next
	}
	if l.next != nil {
		l.next.prev = l.prev
	} else {
		b.tail = l.prev
	}
	l.prev, l.next, l.inFailed = nil, nil, false
}

// retryHeap holds the lanes whose head waits out a retry, the earliest
// due first.
type retryHeap[T any, K comparable] []*lane[T, K]

func (h retryHeap[T, K]) Len() int           { return len(h) }
func (h retryHeap[T, K]) Less(i, j int) bool { return h[i].retryAt.Before(h[j].retryAt) }
func (h retryHeap[T, K]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx, h[j].heapIdx = i, j
}
func (h *retryHeap[T, K]) Push(x any) {
	l := x.(*lane[T, K])
	l.heapIdx = len(*h)
	*h = append(*h, l)
}
func (h *retryHeap[T, K]) Pop() any {
	old := *h
	l := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	l.heapIdx = -1
	return l
}

// push adds l, and reports whether it is now the earliest.
func (h *retryHeap[T, K]) push(l *lane[T, K]) bool {
	heap.Push(h, l)
	return l.heapIdx == 0
}

// eachBegunLocked calls f for each lane of the shard whose head has
// begun and has no fate yet: in a handler, being dead-lettered, waiting
// out a retry or waiting for a worker after one. A worker's lane is found
// in held, not in a list, so that a value's way through the Pool links
// nothing; the walk costs Workers steps and one per failing lane, under
// the shard's mutex (Workers times the shards for the Pool), at each
// Stats call and each supervisor tick (see logSlowKeys).
func (s *shard[T, K]) eachBegunLocked(f func(*lane[T, K])) {
	for _, l := range s.held {
		if l != nil && !l.inFailed {
			f(l)
		}
	}
	for l := s.failed.head; l != nil; l = l.next {
		f(l)
	}
}

// tickEvery is how often the supervisor looks for slow keys, and moves
// the clock that dates a value's first attempt.
const tickEvery = 100 * time.Millisecond

// supervise is the supervisor goroutine: it hands each lane whose retry is
// due to a worker, and, every tick, logs the keys that held up their
// values longer than Options.SlowKey.
func (p *Pool[T, K]) supervise() {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	tick := time.NewTicker(tickEvery)
	defer tick.Stop()
	for {
		if next := p.retryDue(); next >= 0 {
			timer.Reset(next)
		}
		select {
		case <-p.g.Stopping().Done():
			return
		case <-timer.C:
		case <-p.wakeSup:
			timer.Stop()
		case now := <-tick.C:
			p.now.Store(now.UnixNano())
			p.findStarved()
			p.logSlowKeys(now)
		}
	}
}

// retryDue hands each lane whose retry is due to a worker, and returns
// how long until the next is due, or -1 if none waits.
func (p *Pool[T, K]) retryDue() time.Duration {
	var next time.Duration = -1
	now := time.Now()
	for i, s := range p.shards {
		s.mu.Lock()
		woke := false
		for len(s.retry) > 0 && !s.retry[0].retryAt.After(now) {
			l := heap.Pop(&s.retry).(*lane[T, K])
			l.retryAt = time.Time{}
			s.stats.Backoff--
			s.stats.Waiting++
			s.readyLocked(l)
			woke = true
		}
		if len(s.retry) > 0 {
			if d := s.retry[0].retryAt.Sub(now); next < 0 || d < next {
				next = d
			}
		}
		s.mu.Unlock()
		if woke {
			p.wakeOne(i)
		}
	}
	return next
}

// findStarved marks each shard whose first value waiting for a worker
// waited since the last tick: its workers are held in slow handlers,
// while the others keep to their own shards. The next worker that
// finishes a value goes there (see Pool.finish), and stays while the
// shard has work; a parked one is woken for it.
func (p *Pool[T, K]) findStarved() {
	for _, s := range p.shards {
		s.mu.Lock()
		f := s.frontLocked()
		starved := f != noOrd && f == s.front
		s.front = f
		s.mu.Unlock()
		if starved {
			p.starved.Or(1 << s.idx)
			p.wakeOne(s.idx)
		}
	}
}

// logSlowKeys logs each key whose oldest value has been in a handler, or
// waiting out retries, for longer than Options.SlowKey: at most once per
// SlowKey for each.
func (p *Pool[T, K]) logSlowKeys(now time.Time) {
	type slow struct {
		key      K
		since    time.Time
		attempts int
		behind   int
		began    began // copied under the lock
	}
	var out []slow
	for _, s := range p.shards {
		s.mu.Lock()
		s.eachBegunLocked(func(l *lane[T, K]) {
			if now.Sub(time.Unix(0, l.first)) >= p.o.SlowKey && now.Sub(l.logged) >= p.o.SlowKey {
				l.logged = now
				out = append(out, slow{l.key, time.Unix(0, l.first), l.attempts(), l.vals.Len() - 1, l.since()})
			}
		})
		s.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b slow) int { // the oldest first
		if a.began.before(b.began) {
			return -1
		}
		return 1
	})
	for _, s := range out {
		if n, due := p.logSlow.Add(now, 1); due {
			p.o.Logger.Warn("handle: a key holds up its values", slog.Any("key", s.key), slog.Duration("for", now.Sub(s.since)),
				slog.Int("attempts", s.attempts), slog.Int("behind", s.behind), slog.Uint64("count", n))
		}
	}
}
