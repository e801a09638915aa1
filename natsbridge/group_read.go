package natsbridge

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/heraldgo/herald/handle"
	"github.com/heraldgo/herald/natsbridge/internal/wait"
)

// Reading a member: its partitions' values in turn, each value's sequence
// carrying its partition, and its end.

// Receive returns the next value of one of the member's partitions, taking
// them in turn, waiting for one. A value's Seq carries its partition above
// its stream sequence (the low 48 bits). It returns ErrClosed once the
// member is stopped, ctx.Err() if ctx ends first.
func (m *Member[T]) Receive(ctx context.Context) (handle.Delivery[T], error) {
	mustContext(ctx)
	for {
		m.mu.Lock()
		if m.stopped {
			m.mu.Unlock()
			return handle.Delivery[T]{}, ErrClosed
		}
		parts, ws := m.parts, m.ws
		start := m.next
		m.mu.Unlock()
		for j := range ws {
			k := (start + j) % len(ws)
			d, err := ws[k].tryReceive()
			if err != nil {
				if ctx.Err() != nil {
					return handle.Delivery[T]{}, ctx.Err()
				}
				continue // none queued; or stopped by a rebalance
			}
			m.mu.Lock()
			m.next = k + 1
			m.mu.Unlock()
			if d.Seq != 0 {
				d.Seq |= uint64(parts[k]) << seqBits
			}
			return d, nil
		}
		select {
		case <-m.notify:
		case <-ctx.Done():
			return handle.Delivery[T]{}, ctx.Err()
		case <-m.g.Stopping().Done():
		}
	}
}

// Next returns the next value of one of the member's partitions (see
// Receive). As with a durable Watcher's Next, the value it returned is
// done when Next is called again; read a member with a handle.Pool, which
// reads it with Receive and marks each value done as it has its fate.
func (m *Member[T]) Next(ctx context.Context) (T, error) {
	m.nextMu.Lock()
	defer m.nextMu.Unlock()
	if m.lastNext != 0 {
		m.Done(m.lastNext)
		m.lastNext = 0
	}
	d, err := m.Receive(ctx)
	m.lastNext = d.Seq
	return d.Value, err
}

// watcherOf returns the watcher of the partition seq names, reading or
// handing over, and the stream sequence.
func (m *Member[T]) watcherOf(seq uint64) (*Watcher[T], uint64) {
	i, s := int(seq>>seqBits), seq&(1<<seqBits-1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if w := m.readers[i]; w != nil {
		return w, s
	}
	return m.leaving[i], s
}

// Done marks the value seq names done (see Watcher.Done).
func (m *Member[T]) Done(seq uint64) {
	if w, s := m.watcherOf(seq); w != nil {
		w.Done(s)
		// A partition whose next value waits for the values out to be
		// done (after a death, one at a time) may go on now.
		wait.Signal(m.notify)
	}
}

// Holds reports whether the member holds the value seq names, handed out
// in turn (see Watcher.Holds): a partition moving away holds its values
// until its hand-over; once the member no longer reads it, none.
func (m *Member[T]) Holds(seq, turn uint64) (handle.Holding, <-chan struct{}) {
	if w, s := m.watcherOf(seq); w != nil {
		return w.Holds(s, turn)
	}
	return handle.Void, nil
}

// DoneTurn marks the value seq names, handed out in turn, done (see
// Watcher.DoneTurn).
func (m *Member[T]) DoneTurn(seq, turn uint64) {
	if w, s := m.watcherOf(seq); w != nil {
		w.DoneTurn(s, turn)
		wait.Signal(m.notify) // as Done
	}
}

// DeadLetter stores the dead letter of the value seq names (see
// Watcher.DeadLetter).
func (m *Member[T]) DeadLetter(ctx context.Context, seq uint64, f handle.Failure) error {
	w, s := m.watcherOf(seq)
	if w == nil {
		return errors.New("natsbridge: dead letter of a partition the member no longer reads")
	}
	return w.DeadLetter(ctx, s, f)
}

// Key returns v's partition key: the key a handle.Pool reading the member
// keeps in order. A Pool may use a finer key (see Refine), never a coarser
// one or another.
func (m *Member[T]) Key(v T) string {
	k, _ := m.pt.Key(v)
	return k
}

// PartKey is a key that refines a partitioned topic's partition key (see
// Refine).
type PartKey[K comparable] struct {
	Partition string // the partition key
	Sub       K
}

// Refine returns a key function for a handle.Pool reading m that orders
// values by sub within their partition key: values with the same partition
// key and sub are handled in order, others in parallel. A key that is not
// made of the partition key could join values of two partitions, whose
// order no one keeps; a key made by Refine cannot.
func Refine[T any, K comparable](m *Member[T], sub func(T) K) func(T) PartKey[K] {
	return func(v T) PartKey[K] { return PartKey[K]{Partition: m.Key(v), Sub: sub(v)} }
}

// PartitionOf returns the partition of the value the member delivered
// with seq (a handle.PartitionedSource).
func (m *Member[T]) PartitionOf(seq uint64) int { return int(seq >> seqBits) }

// Group returns the name of the member's group, and Name the member's
// own (GroupOptions.Member, or the name Join made up).
func (m *Member[T]) Group() string { return m.group }
func (m *Member[T]) Name() string  { return m.name }

// Stats returns a snapshot of the member's counters.
func (m *Member[T]) Stats() MemberStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.settleLeavingLocked()
	s := m.stats
	for i := range m.readers {
		s.Partitions = append(s.Partitions, i)
	}
	slices.Sort(s.Partitions)
	s.Redelivered, s.HandedBack, s.Gaps, s.Poisoned = m.gone.Redelivered, m.gone.HandedBack, m.gone.Gaps, m.gone.Poisoned
	for _, w := range m.last {
		s.addWatcher(w.Stats())
	}
	return s
}

// addWatcher adds the counters of a partition's watcher to s.
func (s *MemberStats) addWatcher(ws WatcherStats) {
	s.Redelivered += ws.Redelivered
	s.HandedBack += ws.HandedBack
	s.Gaps += ws.Gaps
	s.Poisoned += ws.Poisoned
}

// Stop ends the member: it leaves the group (the others take its
// partitions over at once, once it has handed them over), and stops its
// watchers, each handing its partition over once the values it handed out
// are done, or after the takeover time (see Watcher.Stop), a partition
// that was moving to another member too. It is idempotent.
func (m *Member[T]) Stop() { m.halt(context.Background()) }

// halt is Stop, its server calls bounded by end too (see endCtx).
func (m *Member[T]) halt(end context.Context) []*Watcher[T] {
	var all []*Watcher[T]
	m.stopOnce.Do(func() {
		_ = m.g.Shutdown(end)
		ctx, cancel := context.WithTimeout(end, deleteTimeout)
		_ = m.kv.Delete(ctx, m.key)
		cancel()
		m.mu.Lock()
		m.stopped = true
		for i, w := range m.readers {
			m.leaving[i], m.since[i] = w, time.Now()
		}
		clear(m.readers)
		m.sortLocked()
		m.mu.Unlock()
		wait.Signal(m.notify)
	})
	m.mu.Lock()
	for _, w := range m.leaving {
		all = append(all, w)
	}
	m.mu.Unlock()
	for _, w := range all {
		_ = w.halt(end)
		w.d.arm(w) // a partition moving already: bounded now too
	}
	return all
}

func (m *Member[T]) shutdown(ctx context.Context) error { return m.Shutdown(ctx) }

// Shutdown is Stop, then it waits until every partition is handed over,
// bounded by ctx (see Watcher.Shutdown). It panics on a nil ctx.
func (m *Member[T]) Shutdown(ctx context.Context) error {
	mustContext(ctx)
	end, cancel := endCtx(ctx)
	defer cancel()
	var first error
	for _, w := range m.halt(end) {
		if err := w.shutdownWithin(ctx, end); err != nil && first == nil {
			first = err
		}
	}
	m.mu.Lock()
	m.settleLeavingLocked()
	m.mu.Unlock()
	m.pt.parts[0].forget(m)
	return first
}
