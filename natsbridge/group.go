package natsbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/heraldgo/herald/natsbridge/internal/lifecycle"
	"github.com/heraldgo/herald/natsbridge/internal/wait"
)

// A consumer group shares a partitioned topic's partitions among its live
// members, each partition read by one member at a time through a durable
// watcher named after the group (so a partition's position, its one active
// reader, its takeover and its record are those of durable watchers).
//
// Membership: each member writes, every third of the takeover time (and
// whenever its partitions change), a key of its own in the topic's bucket
// (g.<group>.m.<member>) saying until when it is alive and which
// partitions it reads; a member is live while that time has not passed.
// Each member reads the keys on the same beat and computes, from the live
// members' keys alone, the same assignment (see assign): shares within
// one of each other; each partition kept by the member that reads it,
// within its share; the rest by rendezvous hashing. So a member that
// joins takes its share from the others, one that leaves or dies gives
// its partitions to the others, and nothing else moves (sticky).
//
// A member that loses a partition stops its watcher: it hands back what it
// had not handed to its handlers, lets them finish what they hold, however
// long that takes (a slow handler delays the hand-over: the partition stays
// this member's meanwhile, and its Pool's Stats.Blocked names the key),
// acknowledges it, and unpins itself; only then does the server give the
// partition to the member that gained it, which waits for it as a standby.
// So a key's values are never handled by two members at once, nor out of
// order, in a rebalance. Only when the member stops (Stop, Shutdown) is
// the hand-over bounded: by the takeover time, or Shutdown's ctx. A member that dies loses its partitions when its
// pins expire (the takeover time); the new owner waits out the dead one's
// lease (see the record in durable_keep.go), so that even a reader that
// lost its turn without knowing it stops before the new one starts.

// GroupOptions configures a member of a consumer group. The zero value is
// ready to use.
type GroupOptions struct {
	// Member names this member in the group: letters, digits, '-' and
	// '_'. A member that comes back under its name (a StatefulSet's pod)
	// within the takeover time finds its partitions as it left them,
	// without a rebalance. Empty means a name of its own, new each time.
	Member string
	// Takeover is how long the group waits for a member that stopped
	// answering before its partitions go to the others, and how long a
	// partition waits for its reader (WatchOptions.Takeover). Zero means
	// DefaultTakeover; at least 2s.
	Takeover time.Duration
	// QueueLength is the length of each partition's watcher's queue. Zero
	// means broadcast.DefaultQueueLength.
	QueueLength int
	// DeadLetters, if set, is where a handle.Pool reading the member keeps
	// what it gives up on (WatchOptions.DeadLetters).
	DeadLetters *Topic[DeadLetter]
}

// seqBits is how many bits of a member's Delivery.Seq carry the
// partition's stream sequence; the partition is above them.
const seqBits = 48

// Member is one member of a consumer group of a partitioned topic: it
// reads the partitions the group gives it, and is a handle.AckSource (and
// a handle.DeadLetterSink) for a handle.Pool, whose handlers then handle
// the keys of all its partitions in parallel, each key in order. Give it
// the partition key, or one that refines it (see Refine), as the Pool's
// key. It is safe for concurrent use; get one from Partitioned.Join and
// Stop or Shutdown it (a Pool reading it does).
type Member[T any] struct {
	pt       *Partitioned[T]
	group    string
	name     string
	key      string // its membership key
	o        GroupOptions
	kv       jetstream.KeyValue
	g        *lifecycle.Group
	notify   chan struct{} // capacity 1: a watcher queued a value, or the assignment changed
	stopOnce sync.Once
	nextMu   sync.Mutex // guards lastNext: the value the last Next returned
	lastNext uint64

	mu      sync.Mutex          // guards the fields below
	readers map[int]*Watcher[T] // the partitions it reads
	// parts and ws are readers in partition order, for Receive: made anew
	// (never changed in place) whenever readers changes (sortLocked).
	parts   []int
	ws      []*Watcher[T]
	leaving map[int]*Watcher[T] // partitions it stopped, handing them over
	since   map[int]time.Time   // when each leaving partition was stopped
	stats   MemberStats         // Partitions and the sums are filled in by Stats
	// last is each partition's latest watcher, and gone the sums of the
	// counters of the watchers before them: Stats adds them up.
	last    map[int]*Watcher[T]
	gone    MemberStats
	next    int // the partition Receive looks at first
	stopped bool
}

// MemberStats is a snapshot of a member's counters.
type MemberStats struct {
	// Partitions are the partitions assigned to the member: it reads
	// them, or waits for their last owner to hand them over (which then
	// lists them too, until its handlers are done: the group has settled
	// once each partition is listed by one member). Members is how many
	// live members it counted last.
	Partitions []int
	Members    int
	// Rebalances counts the changes of the member's partitions; Handovers
	// the partitions it handed over, and HandoverTime how long the last
	// took (from its Stop to the hand-over: its handlers finishing what
	// they held).
	Rebalances, Handovers uint64
	HandoverTime          time.Duration
	// The counters of the member's partitions' watchers, added up (see
	// WatcherStats): Redelivered counts the values handed to the member
	// that a member before it may have handed out too (after a takeover).
	Redelivered, HandedBack, Gaps, Poisoned uint64
}

// Join makes this process a member of the consumer group group of the
// partitioned topic: the group shares the partitions among its live
// members. group and o.Member are letters, digits, '-' and '_'. Join
// starts one goroutine, the member's coordinator, and, for each partition
// it reads, a watcher's (see Topic.Watch). It panics on a nil ctx.
func (pt *Partitioned[T]) Join(ctx context.Context, group string, o GroupOptions) (*Member[T], error) {
	mustContext(ctx)
	if o.Member == "" {
		o.Member = nuid.Next()
	}
	for _, n := range []string{group, o.Member} {
		if err := validDurable(n); err != nil {
			return nil, fmt.Errorf("natsbridge: group or member name: %w", err)
		}
	}
	if o.Takeover == 0 {
		o.Takeover = DefaultTakeover
	}
	if o.Takeover < 2*time.Second {
		return nil, fmt.Errorf("natsbridge: GroupOptions.Takeover %v is below 2s", o.Takeover)
	}
	kv, err := pt.parts[0].durables(ctx)
	if err != nil {
		return nil, err
	}
	m := &Member[T]{
		pt: pt, group: group, name: o.Member, key: "g." + group + ".m." + o.Member, o: o, kv: kv,
		g: lifecycle.New(), notify: make(chan struct{}, 1),
		readers: map[int]*Watcher[T]{}, leaving: map[int]*Watcher[T]{}, since: map[int]time.Time{}, last: map[int]*Watcher[T]{},
	}
	if err := m.heartbeat(ctx); err != nil {
		return nil, err
	}
	if err := pt.parts[0].adopt(m); err != nil {
		return nil, err
	}
	m.rebalance(ctx)
	m.g.Go(m.coordinate)
	return m, nil
}

// liveness is what a member's key holds: until when it is live, and the
// partitions it reads.
type liveness struct {
	Until int64 `json:"until"` // Unix nanoseconds
	Parts []int `json:"parts,omitempty"`
}

// heartbeat writes that this member is live for a takeover time more,
// and which partitions it reads.
func (m *Member[T]) heartbeat(ctx context.Context) error {
	b, _ := json.Marshal(liveness{Until: time.Now().Add(m.o.Takeover).UnixNano(), Parts: m.claimed()})
	if _, err := m.kv.Put(ctx, m.key, b); err != nil {
		return fmt.Errorf("natsbridge: group %q: member %q: %w", m.group, m.name, err)
	}
	return nil
}

// coordinate is the member's coordinator goroutine: every third of the
// takeover time it says this member is live, and shares the partitions
// among the live members anew.
func (m *Member[T]) coordinate() {
	tick := time.NewTicker(m.o.Takeover / 3)
	defer tick.Stop()
	for {
		select {
		case <-m.g.Stopping().Done():
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(m.g.Stopping(), resumeTimeout)
		if err := m.heartbeat(ctx); err != nil {
			m.warn(0, "natsbridge: group member not renewed", err)
		}
		m.rebalance(ctx)
		cancel()
	}
}

// claimed returns the partitions the member reads, sorted.
func (m *Member[T]) claimed() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	parts := make([]int, 0, len(m.readers))
	for i := range m.readers {
		parts = append(parts, i)
	}
	slices.Sort(parts)
	return parts
}

// members returns the live members of the group, each with the
// partitions it said it reads.
func (m *Member[T]) members(ctx context.Context) (map[string][]int, error) {
	prefix := "g." + m.group + ".m."
	l, err := m.kv.ListKeysFiltered(ctx, prefix+"*")
	if err != nil {
		return nil, err
	}
	now := time.Now()
	live := map[string][]int{}
	for k := range l.Keys() {
		e, err := m.kv.Get(ctx, k)
		if err != nil {
			continue // deleted meanwhile
		}
		var lv liveness
		if json.Unmarshal(e.Value(), &lv) == nil && time.Unix(0, lv.Until).After(now) {
			live[k[len(prefix):]] = lv.Parts
		}
	}
	return live, nil
}

// rebalance reads the live members and starts and stops this member's
// partitions' watchers as the assignment says.
func (m *Member[T]) rebalance(ctx context.Context) {
	live, err := m.members(ctx)
	if err != nil {
		m.warn(0, "natsbridge: group members not read", err)
		return
	}
	live[m.name] = m.claimed() // live, as it is running, and its own word is the latest
	stop, start := m.plan(len(live), assign(live, len(m.pt.parts), m.name))
	for _, w := range stop {
		// It hands the partition over once its handlers are done, however
		// long they take: until then the partition stays this member's.
		w.d.patient.Store(true)
		w.Stop()
	}
	started := map[int]*Watcher[T]{}
	for _, i := range start {
		w, err := m.pt.parts[i].watch(ctx, WatchOptions{Durable: m.group, Takeover: m.o.Takeover, QueueLength: m.o.QueueLength, DeadLetters: m.o.DeadLetters}, nil, m.notify)
		if err != nil {
			m.warn(i, "natsbridge: group partition not read yet", err, slog.Int("partition", i))
			continue
		}
		started[i] = w
	}
	if m.install(started, len(stop)) {
		// Say at once what it reads now, so that the others' next
		// assignment keeps it.
		if err := m.heartbeat(ctx); err != nil {
			m.warn(0, "natsbridge: group member not renewed", err)
		}
	}
}

// warn logs, on partition i's topic, a call of the member's coordinator
// that failed with err, unless the member is stopping: a call its Stop
// cut short is no fault.
func (m *Member[T]) warn(i int, msg string, err error, attrs ...any) {
	if m.g.Stopping().Err() != nil {
		return
	}
	args := append([]any{slog.String("group", m.group)}, attrs...)
	m.pt.parts[i].log.Warn(msg, append(args, errAttr(err))...)
}

// plan returns the watchers of the partitions this member no longer
// gets, which it moves to leaving (Receive reads them no more), and the
// partitions it gets and does not read (nor still hands over).
func (m *Member[T]) plan(live int, mine []int) (stop []*Watcher[T], start []int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.Members = live
	if m.stopped {
		return nil, nil
	}
	m.settleLeavingLocked()
	for i, w := range m.readers {
		if !slices.Contains(mine, i) {
			delete(m.readers, i)
			m.leaving[i], m.since[i] = w, time.Now()
			stop = append(stop, w)
		}
	}
	m.sortLocked()
	for _, i := range mine {
		if m.readers[i] == nil && m.leaving[i] == nil {
			start = append(start, i)
		}
	}
	return stop, start
}

// sortLocked makes parts and ws anew from readers.
func (m *Member[T]) sortLocked() {
	parts := make([]int, 0, len(m.readers))
	for i := range m.readers {
		parts = append(parts, i)
	}
	slices.Sort(parts)
	ws := make([]*Watcher[T], len(parts))
	for j, i := range parts {
		ws[j] = m.readers[i]
	}
	m.parts, m.ws = parts, ws
}

// install makes the watchers started this member's readers, and counts a
// rebalance if anything changed, which it reports; if the member stopped
// meanwhile, it stops them.
func (m *Member[T]) install(started map[int]*Watcher[T], stopped int) (changed bool) {
	m.mu.Lock()
	done := m.stopped
	if !done {
		for i, w := range started {
			if old := m.last[i]; old != nil {
				m.gone.addWatcher(old.Stats()) // handed over: its counts are final
			}
			m.readers[i], m.last[i] = w, w
		}
		m.sortLocked()
		if changed = stopped+len(started) > 0; changed {
			m.stats.Rebalances++
		}
	}
	m.mu.Unlock()
	for _, w := range started {
		if done {
			w.Stop()
		}
	}
	wait.Signal(m.notify)
	return changed
}

// settleLeavingLocked forgets the partitions whose hand-over is done.
func (m *Member[T]) settleLeavingLocked() {
	for i, w := range m.leaving {
		select {
		case <-w.d.finished:
			m.stats.Handovers++
			m.stats.HandoverTime = time.Since(m.since[i])
			delete(m.leaving, i)
			delete(m.since, i)
		default:
		}
	}
}
