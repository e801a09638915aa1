package natsbridge_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldgo/herald/handle"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
	"github.com/heraldgo/herald/natsbridge/natstest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The tests in this file hold consumer groups to their promises under
// the faults a deployment meets: a member killed while a handler runs, a
// member killed while the group rebalances, a member whose handler
// outlasts the takeover time while its partition moves, retries and dead
// letters while partitions move, a Pool key that does not refine the
// partition key, shutdowns with the server gone. Every handler's start
// and end is recorded with the wall clock of the one machine the members
// share, so that the checks see, value by value, which member handled
// which value of a key when.

// hevent is a handler's start or end, as a member recorded it.
type hevent struct {
	member  string
	start   bool // false: the handler returned
	id      int
	seq     uint64 // the member's Delivery.Seq: the partition above the stream sequence
	attempt int
	ok      bool  // for an end: the handler returned nil
	at      int64 // wall clock, Unix nanoseconds
}

// htrace keeps the handler events of every member of a test.
type htrace struct {
	mu     sync.Mutex // guards events, parts, gone
	events []hevent
	parts  []partsEvent     // the members' partitions as they changed
	gone   map[string]int64 // member → when it was killed: its open handlers ended then
}

// partsEvent is a member's partitions from when it reported them on.
type partsEvent struct {
	member string
	parts  []int
	at     int64 // wall clock, Unix nanoseconds
}

// noteParts records that member reads parts from now on.
func (tr *htrace) noteParts(member string, parts []int) {
	tr.mu.Lock()
	tr.parts = append(tr.parts, partsEvent{member, parts, time.Now().UnixNano()})
	tr.mu.Unlock()
}

// keyHistory describes, in time order, the runs of key k's values and
// the members' partitions as they changed: what a failed check of k's
// order needs to be read.
func (tr *htrace) keyHistory(runs []hrun, key func(id int) string, k string) string {
	type line struct {
		at   int64
		text string
	}
	var ls []line
	for _, r := range runs {
		if key(r.id) == k {
			ls = append(ls, line{r.start, fmt.Sprintf("%s begins %d (partition %d, seq %d) for %s", r.member, r.id, r.seq>>48, r.seq&(1<<48-1), runFor(r))})
		}
	}
	tr.mu.Lock()
	for _, p := range tr.parts {
		ls = append(ls, line{p.at, fmt.Sprintf("%s reads partitions %v", p.member, p.parts)})
	}
	for m, at := range tr.gone {
		ls = append(ls, line{at, m + " killed"})
	}
	tr.mu.Unlock()
	slices.SortStableFunc(ls, func(a, b line) int { return cmp.Compare(a.at, b.at) })
	var b strings.Builder
	for i, l := range ls {
		if i == 200 {
			fmt.Fprintf(&b, "\n\t(%d more)", len(ls)-i)
			break
		}
		fmt.Fprintf(&b, "\n\t%8.3fs %s", time.Duration(l.at-ls[0].at).Seconds(), l.text)
	}
	return b.String()
}

func newTrace() *htrace { return &htrace{gone: map[string]int64{}} }

func (tr *htrace) add(e hevent) {
	tr.mu.Lock()
	tr.events = append(tr.events, e)
	tr.mu.Unlock()
}

func (tr *htrace) snapshot() []hevent {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.events)
}

// killed records that member's process ended (SIGKILL) by now.
func (tr *htrace) killed(member string) {
	tr.mu.Lock()
	tr.gone[member] = time.Now().UnixNano()
	tr.mu.Unlock()
}

// began reports whether member began a handler of a value that pred
// holds for.
func (tr *htrace) began(member string, pred func(hevent) bool) bool {
	for _, e := range tr.snapshot() {
		if e.start && (member == "" || e.member == member) && pred(e) {
			return true
		}
	}
	return false
}

// handledOK returns, per ID, how many handlers returned nil for it.
func (tr *htrace) handledOK() map[int]int {
	n := map[int]int{}
	for _, e := range tr.snapshot() {
		if !e.start && e.ok {
			n[e.id]++
		}
	}
	return n
}

// okBy returns how many handlers of member returned nil.
func (tr *htrace) okBy(member string) uint64 {
	var n uint64
	for _, e := range tr.snapshot() {
		if !e.start && e.ok && e.member == member {
			n++
		}
	}
	return n
}

// hrun is one run of a handler: a value, by a member, from start to end
// (end is the member's death, or far in the future, for a handler that
// did not return).
type hrun struct {
	member     string
	id         int
	seq        uint64
	retry      bool // the member had run this value before, and it failed: the same delivery
	start, end int64
}

// runs pairs each start with its end.
func (tr *htrace) runs() []hrun {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	type mk struct {
		member string
		id     int
	}
	open := map[mk]int{}    // the run in progress
	failed := map[mk]bool{} // the last run of the value by the member failed
	var out []hrun
	for _, e := range tr.events {
		k := mk{e.member, e.id}
		if e.start {
			end := int64(1) << 62
			if g, ok := tr.gone[e.member]; ok {
				end = g
			}
			open[k] = len(out)
			out = append(out, hrun{member: e.member, id: e.id, seq: e.seq, retry: failed[k], start: e.at, end: end})
			continue
		}
		if i, ok := open[k]; ok {
			out[i].end = e.at
			delete(open, k)
		}
		failed[k] = !e.ok
	}
	return out
}

// overlaps describes, per key, the handlers of the key that two members
// ran at once (the first such pair, and how many there were): a key's
// values handled by two members at once, which a consumer group promises
// never happens. key maps an ID to its key.
func overlaps(runs []hrun, key func(id int) string) []string {
	by := map[string][]hrun{}
	for _, r := range runs {
		by[key(r.id)] = append(by[key(r.id)], r)
	}
	var out []string
	for _, k := range slices.Sorted(mapsKeys(by)) {
		rs := by[k]
		slices.SortFunc(rs, func(a, b hrun) int { return cmp.Compare(a.start, b.start) })
		n, first := 0, ""
		for i, a := range rs {
			for _, b := range rs[i+1:] {
				if b.start >= a.end || a.member == b.member {
					continue
				}
				if n++; n == 1 {
					first = fmt.Sprintf("member %s began value %d %s into member %s's handler of value %d (which ran %s)",
						b.member, b.id, time.Duration(b.start-a.start), a.member, a.id, runFor(a))
				}
			}
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("key %s handled by two members at once, %d pairs of handlers; first: %s", k, n, first))
		}
	}
	return out
}

func runFor(r hrun) string {
	if r.end >= 1<<62 {
		return "to the end of the test"
	}
	return time.Duration(r.end - r.start).String()
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// memberOrder describes, per member and key, the first value the member
// began for the first time (no member had begun it before) after it had
// begun a later value of that key: a key handled out of order. A value
// begun again (a retry, or a redelivery: at least once, counted in
// Redelivered) is not out of order.
func memberOrder(runs []hrun, key func(id int) string) []string {
	type mk struct{ member, key string }
	last := map[mk]int{}
	begun := map[int]bool{}
	var out []string
	bad := map[mk]bool{}
	for _, r := range slices.SortedStableFunc(slices.Values(runs), func(a, b hrun) int { return cmp.Compare(a.start, b.start) }) {
		k := mk{r.member, key(r.id)}
		if r.id < last[k] && !begun[r.id] && !bad[k] {
			out = append(out, fmt.Sprintf("member %s began key %s's value %d, for the first time, after value %d", r.member, k.key, r.id, last[k]))
			bad[k] = true
		}
		last[k] = max(last[k], r.id)
		begun[r.id] = true
	}
	return out
}

// staleAfter describes, per key and member, the values of the key the
// member began after another member had finished a later value of that
// key (the first, and how many): the key's state goes back in time, a
// stale write. A member that reads a key again from an earlier value
// after a takeover (a redelivery after a kill) began no value of the key
// before the other finished its later one: that is not counted. It
// returns the keys it describes too.
func staleAfter(runs []hrun, key func(id int) string) (out, keys []string) {
	by := map[string][]hrun{}
	for _, r := range runs {
		by[key(r.id)] = append(by[key(r.id)], r)
	}
	for _, k := range slices.Sorted(mapsKeys(by)) {
		rs := by[k]
		type stale struct {
			n     int
			first string
		}
		per := map[string]*stale{}
		for _, a := range rs {
			for _, b := range rs {
				if a.member == b.member || b.id <= a.id || b.end >= 1<<62 || a.start <= b.end {
					continue
				}
				earlier := false // a's member was reading the key before b's finished
				for _, c := range rs {
					if c.member == a.member && c.start < b.end {
						earlier = true
					}
				}
				if !earlier {
					continue
				}
				st := per[a.member]
				if st == nil {
					st = &stale{first: fmt.Sprintf("value %d begun %s after member %s had finished value %d", a.id, time.Duration(a.start-b.end), b.member, b.id)}
					per[a.member] = st
				}
				st.n++
				break
			}
		}
		for _, m := range slices.Sorted(mapsKeys(per)) {
			keys = append(keys, k)
			out = append(out, fmt.Sprintf("key %s went back in time in member %s: %d values begun after a later one was finished elsewhere; first: %s", k, m, per[m].n, per[m].first))
		}
	}
	return out, keys
}

// deliveredAgain returns how many times, per member, a value came to it
// that some member (it or another) had begun before: the values a
// member's Redelivered must count. A retry of a failed value within a
// member is the same delivery.
func deliveredAgain(runs []hrun) map[string]int {
	seen := map[int]bool{}
	again := map[string]int{}
	for _, r := range slices.SortedFunc(slices.Values(runs), func(a, b hrun) int { return cmp.Compare(a.start, b.start) }) {
		if r.retry {
			continue
		}
		if seen[r.id] {
			again[r.member]++
		}
		seen[r.id] = true
	}
	return again
}

// faultKey is the partition key of the group tests in this file.
func faultKey(o Order) string { return o.Item }

// keyOfID maps an ID to its key, for keys values spread over.
func keyOfID(keys int) func(int) string {
	return func(id int) string { return "k" + strconv.Itoa(id%keys) }
}

// inMember is a member of a group in the test's process, with its Pool.
type inMember struct {
	name string
	pt   *natsbridge.Partitioned[Order]
	m    *natsbridge.Member[Order]
	p    *handle.Pool[Order, string]
}

// joinRecorded joins group "ship" of the partitioned topic name as
// member name, on a connection of its own, with a Pool keyed by the
// partition key whose handler records its start and end in tr around fn.
func joinRecorded(t *testing.T, s *embedded.Server, name, member string, tr *htrace, fn func(context.Context, Order) error, ho handle.Options, g natsbridge.GroupOptions) *inMember {
	t.Helper()
	_, js := connect(t, s)
	pt, err := natsbridge.NewPartitioned(testCtx(t), js, name, natsbridge.JSON[Order](), faultKey, natsbridge.PartitionOptions{Topic: natsbridge.TopicOptions{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pt.Shutdown(context.Background()) })
	g.Member = member
	if g.Takeover == 0 {
		g.Takeover = 2 * time.Second
	}
	m, err := pt.Join(testCtx(t), "ship", g)
	if err != nil {
		t.Fatal(err)
	}
	if ho.Logger == nil {
		ho.Logger = quiet
	}
	p := handle.New(m, m.Key, recorded(member, tr, fn), ho)
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return &inMember{name: member, pt: pt, m: m, p: p}
}

// recorded wraps fn so that each call is recorded in tr as member's.
func recorded(member string, tr *htrace, fn func(context.Context, Order) error) handle.Func[Order] {
	return func(ctx context.Context, o Order) error {
		tr.add(hevent{member: member, start: true, id: o.ID, seq: handle.Seq(ctx), attempt: handle.Attempt(ctx), at: time.Now().UnixNano()})
		err := fn(ctx, o)
		tr.add(hevent{member: member, id: o.ID, seq: handle.Seq(ctx), ok: err == nil, at: time.Now().UnixNano()})
		return err
	}
}

// publishOrders publishes orders first..last, order i with key
// "k"+i%keys, and waits for every ack.
func publishOrders(t *testing.T, pt *natsbridge.Partitioned[Order], first, last, keys int) {
	t.Helper()
	pub, err := pt.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := first; i <= last; i++ {
		if err := pub.Publish(testCtx(t), Order{ID: i, Item: keyOfID(keys)(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// firstOfPartition returns, for each partition, the smallest ID in
// 1..keys whose key the partition holds.
func firstOfPartition(pt *natsbridge.Partitioned[Order], keys int) map[int]int {
	out := map[int]int{}
	for id := 1; id <= keys; id++ {
		p := pt.Partition(keyOfID(keys)(id))
		if _, ok := out[p]; !ok {
			out[p] = id
		}
	}
	return out
}

// TestGroupHandoverWaitsForHandlers: member a reads both partitions, and
// one handler of each is held for half a second, less than the takeover
// time. Member b joins and one partition moves to it: b begins no value
// of that partition before a's handler of it has returned, no key is
// handled by two members at once, nor goes back in time, nothing is
// handled twice, and a counts one hand-over that took as long as its
// handler held it.
func TestGroupHandoverWaitsForHandlers(t *testing.T) {
	t.Parallel() // it waits on takeovers, not on the CPU
	a, b := slowRebalance(t, "fault.handover", 500*time.Millisecond)
	if st := a.m.Stats(); st.Handovers != 2 || st.Redelivered != 0 {
		t.Errorf("a's Stats %+v: want 2 hand-overs (one to b, one at its Shutdown), nothing redelivered", st)
	}
	if st := b.m.Stats(); st.Redelivered != 0 {
		t.Errorf("b's Stats %+v: want nothing redelivered after a clean hand-over", st)
	}
}

// TestGroupSlowHandlerKeepsPartitionInRebalance: as
// TestGroupHandoverWaitsForHandlers, with a's held handlers longer than
// the takeover time (a slow payment, a stuck call). The package doc
// promises that in a rebalance "its old owner's handlers finish what
// they hold, then the new owner reads on", and the group's design that
// "a key's values are never handled by two members at once, nor out of
// order, in a rebalance": b begins no value of the moved partition while
// a's handler of it runs, and a handles none of it after b began.
func TestGroupSlowHandlerKeepsPartitionInRebalance(t *testing.T) {
	t.Parallel() // it waits on takeovers, not on the CPU
	slowRebalance(t, "fault.slow", 0)
}

// slowRebalance runs member a on both partitions of a new partitioned
// topic name, with the handler of one value of each partition held
// (holdFor after the partition moved, or, if 0, three takeover times or
// until b begins a value of the moved partition), while member b joins
// and one partition moves to b. It checks that b began no value of the
// moved partition while a's handler of it ran, and each key's order
// across the two, and returns the members, shut down.
func slowRebalance(t *testing.T, name string, holdFor time.Duration) (a, b *inMember) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	const keys, n = 20, 200
	pt := newPartitioned(t, js, name, 2)
	held := firstOfPartition(pt, keys)
	release := make(chan struct{})
	tr := newTrace()
	slow := func(ctx context.Context, o Order) error {
		if o.ID == held[0] || o.ID == held[1] {
			<-release
		}
		return nil
	}
	a = joinRecorded(t, s, name, "a", tr, slow, handle.Options{Workers: 4}, natsbridge.GroupOptions{})
	eventually(t, "a reads both partitions", func() bool { return len(a.m.Stats().Partitions) == 2 })
	publishOrders(t, pt, 1, n, keys)
	heldKeys := []string{keyOfID(keys)(held[0]), keyOfID(keys)(held[1])}
	eventually(t, "a handles every key but the two held", func() bool {
		ok := tr.handledOK()
		for id := 1; id <= n; id++ {
			if !slices.Contains(heldKeys, keyOfID(keys)(id)) && ok[id] == 0 {
				return false
			}
		}
		return tr.began("a", func(e hevent) bool { return e.id == held[0] }) && tr.began("a", func(e hevent) bool { return e.id == held[1] })
	})
	b = joinRecorded(t, s, name, "b", tr, slow, handle.Options{Workers: 4}, natsbridge.GroupOptions{})
	eventually(t, "b gets one partition, a gives it", func() bool { return len(b.m.Stats().Partitions) == 1 && len(a.m.Stats().Partitions) == 1 })
	moved := b.m.Stats().Partitions[0]
	movedKey := keyOfID(keys)(held[moved])
	inMoved := func(e hevent) bool { return pt.Partition(keyOfID(keys)(e.id)) == moved }
	wait := holdFor
	if wait == 0 {
		wait = 3 * 2 * time.Second
	}
	for deadline := time.Now().Add(wait); time.Now().Before(deadline) && !tr.began("b", inMoved); {
		time.Sleep(10 * time.Millisecond) // a bounded observation of what must not happen
	}
	early := tr.began("b", inMoved)
	close(release)
	eventually(t, "every value handled", func() bool {
		ok := tr.handledOK()
		for id := 1; id <= n; id++ {
			if ok[id] == 0 {
				return false
			}
		}
		return true
	})
	eventually(t, "a's Pool idle", func() bool { st := a.p.Stats(); return st.InFlight+st.Waiting+st.Backoff == 0 })
	for _, m := range []*inMember{a, b} {
		if err := m.p.Shutdown(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		checkConservedPool(t, m.p.Stats())
	}
	runs := tr.runs()
	if early {
		t.Errorf("member b began values of partition %d while member a's handler of value %d (key %s, that partition) was still running: the partition was handed over before a's handlers were done", moved, held[moved], movedKey)
	}
	for _, bad := range overlaps(runs, keyOfID(keys)) {
		t.Error(bad)
	}
	stale, staleKeys := staleAfter(runs, keyOfID(keys))
	for _, bad := range stale {
		t.Error(bad)
	}
	if len(staleKeys) > 0 {
		t.Logf("key %s's history:%s", staleKeys[0], tr.keyHistory(runs, keyOfID(keys), staleKeys[0]))
	}
	for _, bad := range memberOrder(runs, keyOfID(keys)) {
		t.Error(bad)
	}
	again := deliveredAgain(runs)
	var twice, redelivered uint64
	for _, m := range []*inMember{a, b} {
		twice += uint64(again[m.name])
		redelivered += m.m.Stats().Redelivered
	}
	if twice > redelivered {
		t.Errorf("%d values came again to a member, Redelivered %d", twice, redelivered)
	}
	t.Logf("partition %d moved; a: %+v; b: %+v; delivered again %v", moved, a.m.Stats(), b.m.Stats(), again)
	return a, b
}

// TestGroupRetryingValueMovesWithPartition: member a reads both
// partitions; one value of each fails every time, and waits out its
// retries (backoff, MaxAttempts 4) when member b joins and one partition
// moves to it. Every value has one counted fate: each failing value is
// dead-lettered once, after MaxAttempts attempts in all (the attempts are
// the value's, not a member's), in the group's dead-letter topic; no key
// is handled by two members at once; and each member's Pool ends with
// nothing held (a value whose partition moved has a fate in the member
// that held it: dead-lettered, or given back).
func TestGroupRetryingValueMovesWithPartition(t *testing.T) {
	t.Parallel() // it waits on takeovers and retries, not on the CPU
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	const name, keys, n, attempts = "fault.retry", 20, 100, 4
	pt := newPartitioned(t, js, name, 2)
	dlq := newTopicOf(t, js, "fault.retrydead", natsbridge.JSON[natsbridge.DeadLetter](), natsbridge.TopicOptions{})
	failing := firstOfPartition(pt, keys)
	tr := newTrace()
	fail := func(ctx context.Context, o Order) error {
		if o.ID == failing[0] || o.ID == failing[1] {
			return errors.New("card declined")
		}
		return nil
	}
	ho := handle.Options{Workers: 4, RetryMin: 600 * time.Millisecond, RetryMax: 3 * time.Second, MaxAttempts: attempts}
	g := natsbridge.GroupOptions{DeadLetters: dlq}
	a := joinRecorded(t, s, name, "a", tr, fail, ho, g)
	eventually(t, "a reads both partitions", func() bool { return len(a.m.Stats().Partitions) == 2 })
	publishOrders(t, pt, 1, n, keys)
	eventually(t, "both failing values wait out a retry in a", func() bool { return a.p.Stats().Backoff == 2 })
	b := joinRecorded(t, s, name, "b", tr, fail, ho, g)
	eventually(t, "b gets one partition", func() bool { return len(b.m.Stats().Partitions) == 1 && len(a.m.Stats().Partitions) == 1 })
	moved := b.m.Stats().Partitions[0]
	eventually(t, "every other value handled, both failing ones dead-lettered", func() bool {
		ok := tr.handledOK()
		for id := 1; id <= n; id++ {
			if id != failing[0] && id != failing[1] && ok[id] == 0 {
				return false
			}
		}
		info, err := js.Stream(testCtx(t), dlq.Stream())
		return err == nil && info.CachedInfo().State.Msgs >= 2
	})
	// Each member's Pool gives each value it holds a fate; a's held the
	// moved partition's failing value when it moved.
	settled := func() bool {
		for _, m := range []*inMember{a, b} {
			if st := m.p.Stats(); st.InFlight+st.Waiting+st.Backoff != 0 {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(6 * ho.RetryMax)
	for !settled() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // a bounded wait for what must happen
	}
	if !settled() {
		t.Errorf("a value has no final fate %v after its partition moved: a's Pool %+v; b's Pool %+v", 6*ho.RetryMax, a.p.Stats(), b.p.Stats())
	}
	var deadLettered uint64
	for _, m := range []*inMember{a, b} {
		checkConservedPool(t, m.p.Stats())
		deadLettered += m.p.Stats().DeadLettered
	}
	for _, m := range []*inMember{a, b} {
		if err := m.p.Shutdown(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	dw := watchTopic(t, dlq, natsbridge.WatchOptions{From: 1})
	if err := dw.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	letters := map[string][]natsbridge.DeadLetter{}
	for _, d := range drainNow(t, dw) {
		var o Order
		_ = json.Unmarshal(d.Data, &o)
		letters[strconv.Itoa(o.ID)] = append(letters[strconv.Itoa(o.ID)], d)
	}
	tries := map[int]int{}
	for _, r := range tr.runs() {
		tries[r.id]++
	}
	for p, id := range failing {
		ds := letters[strconv.Itoa(id)]
		if len(ds) != 1 {
			t.Errorf("value %d (partition %d, moved: %v) has %d dead letters, want 1", id, p, p == moved, len(ds))
		}
		for _, d := range ds {
			if d.Attempts != attempts {
				t.Errorf("value %d's dead letter says %d attempts, want %d", id, d.Attempts, attempts)
			}
		}
		if tries[id] != attempts {
			t.Errorf("value %d (partition %d, moved: %v) was handled %d times in all, want MaxAttempts (%d): the attempts are the value's", id, p, p == moved, tries[id], attempts)
		}
	}
	if deadLettered != 2 {
		t.Errorf("the Pools dead-lettered %d values, want 2", deadLettered)
	}
	runs := tr.runs()
	for _, bad := range overlaps(runs, keyOfID(keys)) {
		t.Error(bad)
	}
	stale, staleKeys := staleAfter(runs, keyOfID(keys))
	for _, bad := range stale {
		t.Error(bad)
	}
	if len(staleKeys) > 0 {
		t.Logf("key %s's history:%s", staleKeys[0], tr.keyHistory(runs, keyOfID(keys), staleKeys[0]))
	}
	t.Logf("partition %d moved; a: %+v %+v; b: %+v %+v", moved, a.m.Stats(), a.p.Stats(), b.m.Stats(), b.p.Stats())
}

// TestGroupMixedKeyCountedValueByValue: a Pool reads a member of three
// partitions with a key function that joins every partition's values
// (one key for all). Its first value is held until the Pool has received
// every value, so the key's lane is never empty: Stats.Mixed must count
// exactly the values that came from another partition than the value
// before them, as the handlers' order shows; every value is handled,
// once, in the order received. With the partition key, or Refine, Mixed
// stays 0.
func TestGroupMixedKeyCountedValueByValue(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	const keys, n = 30, 300
	for _, tc := range []struct {
		name  string
		key   func(m *natsbridge.Member[Order]) func(Order) string
		mixed bool
	}{
		{"one key for all", func(*natsbridge.Member[Order]) func(Order) string { return func(Order) string { return "all" } }, true},
		{"the ID modulo 7", func(*natsbridge.Member[Order]) func(Order) string {
			return func(o Order) string { return strconv.Itoa(o.ID % 7) }
		}, true},
		{"the partition key", func(m *natsbridge.Member[Order]) func(Order) string { return m.Key }, false},
		{"refined", func(m *natsbridge.Member[Order]) func(Order) string {
			r := natsbridge.Refine(m, func(o Order) int { return o.ID % 2 })
			return func(o Order) string { k := r(o); return k.Partition + "/" + strconv.Itoa(k.Sub) }
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "fault.mixed" + strconv.Itoa(len(tc.name))
			pt := newPartitioned(t, js, name, 3)
			m, err := pt.Join(testCtx(t), "ship", natsbridge.GroupOptions{Member: "a", Takeover: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, "a reads the three partitions", func() bool { return len(m.Stats().Partitions) == 3 })
			publishOrders(t, pt, 1, n, keys)
			release := make(chan struct{})
			var mu sync.Mutex
			var order []hevent // handler starts
			first := true
			key := tc.key(m)
			p := handle.New(m, key, func(ctx context.Context, o Order) error {
				mu.Lock()
				order = append(order, hevent{id: o.ID, seq: handle.Seq(ctx)})
				hold := first
				first = false
				mu.Unlock()
				if hold {
					<-release
				}
				return nil
			}, handle.Options{Workers: 4, Logger: quiet})
			t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
			eventually(t, "the Pool received every value", func() bool { return p.Stats().Received == n })
			close(release)
			eventually(t, "every value handled", func() bool { return p.Stats().Handled == n })
			st := p.Stats()
			checkConservedPool(t, st)
			mu.Lock()
			defer mu.Unlock()
			// One key for all: every value after the held first one
			// joins a lane that holds values, so Mixed counts each whose
			// partition differs from the value received before it, in
			// the order the key's values are handled.
			var want uint64
			prev := map[string]int{}
			seen := map[int]bool{}
			for _, e := range order {
				if seen[e.id] {
					t.Errorf("value %d handled twice", e.id)
				}
				seen[e.id] = true
			}
			if tc.name == "one key for all" {
				for i, e := range order {
					part := int(e.seq >> 48)
					if i > 0 && part != prev["all"] {
						want++
					}
					prev["all"] = part
				}
				if st.Mixed != want {
					t.Errorf("Stats.Mixed = %d, want %d: the values that joined the key's lane from another partition than the value before them", st.Mixed, want)
				}
			}
			switch {
			case tc.mixed && st.Mixed == 0:
				t.Errorf("Stats.Mixed = 0 with a key that joins partitions (%s)", tc.name)
			case !tc.mixed && st.Mixed != 0:
				t.Errorf("Stats.Mixed = %d with a key that refines the partition key (%s), want 0", st.Mixed, tc.name)
			}
			if err := p.Shutdown(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: Mixed %d (want %d), %d values", tc.name, st.Mixed, want, len(order))
		})
	}
}

// TestGroupShutdownBoundedByCtx: the end calls of a member and of its
// Pool return by their ctx's end, whatever holds them: a handler that
// ignores its ctx, the server gone (killed) so that no request is
// answered. The doc: each end call abandons what it holds once its ctx
// ends, counts it, and returns ctx.Err().
func TestGroupShutdownBoundedByCtx(t *testing.T) {
	t.Parallel() // it waits on timeouts, not on the CPU
	const bound, slack = time.Second, 500 * time.Millisecond
	for _, tc := range []struct {
		name       string
		killServer bool
		call       func(ctx context.Context, m *natsbridge.Member[Order], p *handle.Pool[Order, string], pt *natsbridge.Partitioned[Order]) error
	}{
		{"Pool.Shutdown, handler stuck", false, func(ctx context.Context, _ *natsbridge.Member[Order], p *handle.Pool[Order, string], _ *natsbridge.Partitioned[Order]) error {
			return p.Shutdown(ctx)
		}},
		{"Pool.Shutdown, server killed", true, func(ctx context.Context, _ *natsbridge.Member[Order], p *handle.Pool[Order, string], _ *natsbridge.Partitioned[Order]) error {
			return p.Shutdown(ctx)
		}},
		{"Member.Shutdown, server killed", true, func(ctx context.Context, m *natsbridge.Member[Order], _ *handle.Pool[Order, string], _ *natsbridge.Partitioned[Order]) error {
			return m.Shutdown(ctx)
		}},
		{"Partitioned.Shutdown, server killed", true, func(ctx context.Context, _ *natsbridge.Member[Order], _ *handle.Pool[Order, string], pt *natsbridge.Partitioned[Order]) error {
			return pt.Shutdown(ctx)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := natstest.StartServer(t, natstest.Options{})
			_, js := dial(t, srv.URL())
			const keys, n = 12, 60
			pt, err := natsbridge.NewPartitioned(testCtx(t), js, "fault.bounded", natsbridge.JSON[Order](), faultKey,
				natsbridge.PartitionOptions{Partitions: 3, Topic: natsbridge.TopicOptions{Logger: quiet}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				_ = pt.Shutdown(ctx)
			})
			m, err := pt.Join(testCtx(t), "ship", natsbridge.GroupOptions{Member: "a", Takeover: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, "a reads the three partitions", func() bool { return len(m.Stats().Partitions) == 3 })
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			stuck := make(chan struct{}, 1)
			p := handle.New(m, m.Key, func(ctx context.Context, o Order) error {
				if o.ID == 5 {
					stuck <- struct{}{}
					<-release // ignores its ctx
				}
				return nil
			}, handle.Options{Workers: 4, Logger: quiet})
			t.Cleanup(func() { // before release: its stuck handler returns after
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				_ = p.Shutdown(ctx)
			})
			publishOrders(t, pt, 1, n, keys)
			<-stuck
			eventually(t, "every other key handled", func() bool { st := p.Stats(); return st.Received == n && st.Handled >= n-n/keys })
			if tc.killServer {
				srv.Kill()
			}
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			began := time.Now()
			err = tc.call(ctx, m, p, pt)
			took := time.Since(began)
			if took > bound+slack {
				t.Errorf("%s returned %v after its ctx's start (ctx of %v): it hung past its ctx by %v", tc.name, took.Round(time.Millisecond), bound, (took - bound).Round(time.Millisecond))
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s = %v, want context.DeadlineExceeded (a handler still held a value)", tc.name, err)
			}
			t.Logf("%s: %v in %v", tc.name, err, took.Round(time.Millisecond))
		})
	}
}

// A member process: this test binary started again with procRoleEnv set
// (init runs it before the tests), as a member of group "ship" of a
// partitioned topic of Orders keyed by Item, with a handle.Pool.
const (
	procRoleEnv = "HERALD_NATSBRIDGE_GROUP_MEMBER" // the member's configuration, JSON (procConf)
)

func init() {
	if c := os.Getenv(procRoleEnv); c != "" {
		os.Exit(playProcMember(c))
	}
}

// procConf configures a member process.
type procConf struct {
	URL, Topic, Member string
	Takeover           time.Duration
	Workers            int
	// HoldFrom, if not 0: in each partition, the handler of the first
	// value with an ID at least HoldFrom that the member begins waits for
	// "release" on the member's standard input (ignoring its ctx): a
	// handler in flight for as long as the test wants.
	HoldFrom int
	// Pace is each handler's work.
	Pace time.Duration
	// Window is the Pool's Options.Window (0: the default).
	Window int
	// Fail lists IDs whose handler always fails; RetryMin and
	// MaxAttempts are the Pool's options (0: the defaults); DeadLetters,
	// if set, names the dead-letter topic of the group.
	Fail        []int
	RetryMin    time.Duration
	MaxAttempts int
	DeadLetters string
}

// procStats is what a member process reports: its Pool's and its
// member's counters, and how long the Pool's Shutdown took.
type procStats struct {
	Pool   handle.Stats[string]
	Member natsbridge.MemberStats
	Took   time.Duration
	Err    string
}

// playProcMember is main for a member process. It prints "ready" once
// it has joined, "start <id> <seq> <attempt> <unix ns>" as a handler
// begins and "end <id> <seq> <ok> <unix ns>" as it returns, "parts
// <json>" whenever its partitions change, and "stats <json>" when asked
// ("stats" on its standard input) and, last, once its standard input
// closes: then it shuts its Pool down and exits.
func playProcMember(conf string) int {
	var c procConf
	if err := json.Unmarshal([]byte(conf), &c); err != nil {
		fmt.Fprintln(os.Stderr, "member:", err)
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "member "+c.Member+":", err)
		return 1
	}
	nc, err := nats.Connect(c.URL, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		return fail(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pt, err := natsbridge.NewPartitioned(ctx, js, c.Topic, natsbridge.JSON[Order](), faultKey, natsbridge.PartitionOptions{Topic: natsbridge.TopicOptions{Logger: quiet}})
	if err != nil {
		return fail(err)
	}
	defer pt.Shutdown(ctx)
	g := natsbridge.GroupOptions{Member: c.Member, Takeover: c.Takeover}
	if c.DeadLetters != "" {
		dlq, err := natsbridge.NewTopic(ctx, js, c.DeadLetters, natsbridge.JSON[natsbridge.DeadLetter](), natsbridge.TopicOptions{Logger: quiet})
		if err != nil {
			return fail(err)
		}
		defer dlq.Shutdown(ctx)
		g.DeadLetters = dlq
	}
	m, err := pt.Join(ctx, "ship", g)
	if err != nil {
		return fail(err)
	}
	var outMu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		outMu.Lock()
		fmt.Fprintf(out, format, args...)
		out.Flush()
		outMu.Unlock()
	}
	release := make(chan struct{})
	var held [natsbridge.MaxPartitions]atomic.Bool
	p := handle.New(m, m.Key, func(ctx context.Context, o Order) error {
		seq := handle.Seq(ctx)
		say("start %d %d %d %d\n", o.ID, seq, handle.Attempt(ctx), time.Now().UnixNano())
		if c.HoldFrom > 0 && o.ID >= c.HoldFrom && held[m.PartitionOf(seq)].CompareAndSwap(false, true) {
			<-release
		}
		time.Sleep(c.Pace) // the handler's work
		if slices.Contains(c.Fail, o.ID) {
			say("end %d %d %v %d\n", o.ID, seq, false, time.Now().UnixNano())
			return errors.New("card declined")
		}
		say("end %d %d %v %d\n", o.ID, seq, true, time.Now().UnixNano())
		return nil
	}, handle.Options{Workers: c.Workers, Window: c.Window, RetryMin: c.RetryMin, MaxAttempts: c.MaxAttempts, Logger: quiet})
	stats := func(took time.Duration, err error) {
		st := procStats{Pool: p.Stats(), Member: m.Stats(), Took: took}
		if err != nil {
			st.Err = err.Error()
		}
		b, _ := json.Marshal(st)
		say("stats %s\n", b)
	}
	say("ready\n")
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		var last []int
		tick := time.NewTicker(50 * time.Millisecond) // the test reads the member's partitions as they change
		defer tick.Stop()
		for {
			if parts := m.Stats().Partitions; last == nil || !slices.Equal(parts, last) {
				b, _ := json.Marshal(parts)
				say("parts %s\n", b)
				last = append([]int{}, parts...)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "release":
			close(release)
		case "stats":
			stats(0, nil)
		}
	}
	close(stop)
	<-watched
	began := time.Now()
	err = p.Shutdown(ctx)
	stats(time.Since(began), err)
	return 0
}

// procMember is a member process, as the test follows it.
type procMember struct {
	name  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	done  chan struct{} // closed once its output ended
	tr    *htrace
	mu    sync.Mutex // guards parts, stats, ready
	parts []int
	stats []procStats
}

// startProcMember starts a member process and waits for its "ready".
func startProcMember(t *testing.T, tr *htrace, c procConf) *procMember {
	t.Helper()
	return startProcMemberAs(t, tr, c, c.Member)
}

// startProcMemberAs is startProcMember for a member whose handlers tr
// records as label's: a process that joins under the name of one that
// died.
func startProcMemberAs(t *testing.T, tr *htrace, c procConf, label string) *procMember {
	t.Helper()
	b, _ := json.Marshal(c)
	cmd := exec.CommandContext(testCtx(t), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), procRoleEnv+"="+string(b))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pm := &procMember{name: label, cmd: cmd, in: stdin, done: make(chan struct{}), tr: tr}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-pm.done
			_ = cmd.Wait()
		}
	})
	ready := make(chan struct{})
	go pm.follow(bufio.NewScanner(stdout), ready)
	select {
	case <-ready:
	case <-pm.done:
		t.Fatalf("member %s ended before it was ready", c.Member)
	}
	return pm
}

func (pm *procMember) follow(sc *bufio.Scanner, ready chan struct{}) {
	defer close(pm.done)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "ready":
			close(ready)
		case "start", "end":
			var e hevent
			var third string
			if _, err := fmt.Sscanf(rest, "%d %d %s %d", &e.id, &e.seq, &third, &e.at); err != nil {
				continue
			}
			e.member, e.start = pm.name, word == "start"
			if e.start {
				e.attempt, _ = strconv.Atoi(third)
			} else {
				e.ok = third == "true"
			}
			pm.tr.add(e)
		case "parts":
			var parts []int
			_ = json.Unmarshal([]byte(rest), &parts)
			pm.mu.Lock()
			pm.parts = parts
			pm.mu.Unlock()
			pm.tr.noteParts(pm.name, parts)
		case "stats":
			var st procStats
			if json.Unmarshal([]byte(rest), &st) == nil {
				pm.mu.Lock()
				pm.stats = append(pm.stats, st)
				pm.mu.Unlock()
			}
		}
	}
}

func (pm *procMember) send(t *testing.T, cmd string) {
	t.Helper()
	if _, err := io.WriteString(pm.in, cmd+"\n"); err != nil {
		t.Fatalf("member %s: %v", pm.name, err)
	}
}

// kill ends the member with SIGKILL, as a crash would: its handlers in
// flight end there.
func (pm *procMember) kill() {
	_ = pm.cmd.Process.Kill()
	<-pm.done
	_ = pm.cmd.Wait()
	pm.tr.killed(pm.name)
	pm.mu.Lock()
	pm.parts = nil
	pm.mu.Unlock()
}

// stop closes the member's standard input (its Pool shuts down) and
// returns its last stats.
func (pm *procMember) stop(t *testing.T) procStats {
	t.Helper()
	pm.in.Close()
	<-pm.done
	if err := pm.cmd.Wait(); err != nil {
		t.Errorf("member %s: %v", pm.name, err)
	}
	pm.mu.Lock()
	defer pm.mu.Unlock()
	if len(pm.stats) == 0 {
		t.Fatalf("member %s reported no stats", pm.name)
	}
	return pm.stats[len(pm.stats)-1]
}

// lastStats returns the stats the member reported last.
func (pm *procMember) lastStats() (procStats, bool) {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	if len(pm.stats) == 0 {
		return procStats{}, false
	}
	return pm.stats[len(pm.stats)-1], true
}

func (pm *procMember) partitions() []int {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	return slices.Clone(pm.parts)
}

// settledOn reports whether the members' partitions are 0..p-1, each
// read by one member, in even shares (p/N each, or one more).
func settledOn(ms []*procMember, p int) bool {
	var all []int
	for _, m := range ms {
		parts := m.partitions()
		if len(parts) < p/len(ms) || len(parts) > p/len(ms)+1 {
			return false
		}
		all = append(all, parts...)
	}
	slices.Sort(all)
	return len(all) == p && all[0] == 0 && all[p-1] == p-1 && len(slices.Compact(all)) == p
}

// heldBy returns, by partition, the IDs whose handlers member began held
// (the first it began at or after from in each partition).
func heldBy(tr *htrace, member string, from int) map[int]int {
	held := map[int]int{}
	for _, e := range tr.snapshot() {
		p := int(e.seq >> 48)
		if _, ok := held[p]; e.start && e.member == member && e.id >= from && !ok {
			held[p] = e.id
		}
	}
	return held
}

// steadyPublisher publishes orders first..last with keys spread over
// keys, pausing 10ms every 100 values (a steady stream while members
// come and go), and reports its end on the channel it returns.
func steadyPublisher(ctx context.Context, pt *natsbridge.Partitioned[Order], first, last, keys int) <-chan error {
	return pacedPublisher(ctx, pt, first, last, keys, 10*time.Millisecond)
}

// pacedPublisher is steadyPublisher pausing pause every 100 values.
func pacedPublisher(ctx context.Context, pt *natsbridge.Partitioned[Order], first, last, keys int, pause time.Duration) <-chan error {
	done := make(chan error, 1)
	pub, err := pt.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		done <- err
		return done
	}
	go func() {
		for i := first; i <= last; i++ {
			if err := pub.Publish(ctx, Order{ID: i, Item: keyOfID(keys)(i)}); err != nil {
				done <- err
				return
			}
			if i%100 == 0 {
				time.Sleep(pause) // the load's shape, not a synchronisation
			}
		}
		done <- pub.Shutdown(ctx)
	}()
	return done
}

// checkGroupRun checks what the members of a run did, value by value:
// every ID of 1..n handled (a handler returned nil for it), no key
// handled by two members at once, nor back in time, nor out of order in
// a member; the values that came again to the members still alive
// counted in their Redelivered; each live member's Pool accounts for
// every value it received, its Handled matching the handlers that
// returned; no gap nor poison message.
// gapsOK: the run loses the records' bucket for a while, after which the
// members may count gaps for values that were not lost (a known limit:
// natsbridge/README.md); they are logged, not failed.
func checkGroupRun(t *testing.T, tr *htrace, n, keys int, live map[string]procStats, gapsOK bool) {
	t.Helper()
	ok := tr.handledOK()
	var missing []int
	for id := 1; id <= n; id++ {
		if ok[id] == 0 {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d values never handled: %v", len(missing), missing[:min(len(missing), 20)])
	}
	runs := tr.runs()
	for _, bad := range overlaps(runs, keyOfID(keys)) {
		t.Error(bad)
	}
	stale, staleKeys := staleAfter(runs, keyOfID(keys))
	for _, bad := range stale {
		t.Error(bad)
	}
	if len(staleKeys) > 0 {
		t.Logf("key %s's history:%s", staleKeys[0], tr.keyHistory(runs, keyOfID(keys), staleKeys[0]))
	}
	for _, bad := range memberOrder(runs, keyOfID(keys)) {
		t.Error(bad)
	}
	again := deliveredAgain(runs)
	var twice, redelivered uint64
	for name, st := range live {
		twice += uint64(again[name])
		redelivered += st.Member.Redelivered
		p := st.Pool
		checkConservedPool(t, p)
		if p.InFlight+p.Waiting+p.Backoff != 0 {
			t.Errorf("member %s's Pool still holds values after Shutdown: %+v", name, p)
		}
		if h := tr.okBy(name); p.Handled != h {
			t.Errorf("member %s's Pool counted %d handled, its handlers returned %d times", name, p.Handled, h)
		}
		switch {
		case st.Member.Poisoned != 0 || st.Member.Gaps != 0 && !gapsOK:
			t.Errorf("member %s: %+v, want no gap nor poison message", name, st.Member)
		case st.Member.Gaps != 0:
			t.Logf("member %s counted %d gaps, though the streams are intact (a known limit)", name, st.Member.Gaps)
		}
	}
	if twice > redelivered {
		t.Errorf("the members alive at the end were handed %d values a second time, and counted %d redelivered", twice, redelivered)
	}
	t.Logf("delivered again %v (%d to the members alive, Redelivered %d)", again, twice, redelivered)
}

// TestGroupMemberKilledMidHandler: three member processes (8 workers
// each) share six partitions while values are published; member b is
// killed (SIGKILL) while a handler in each of its partitions is in
// flight, held. The values in those handlers come again to the member that takes b's
// partition over, and every value is handled; then a fourth member joins
// and the group settles again. Throughout, each key's values are handled
// in order, by one member at a time; every value handled twice is
// counted in the Redelivered of the member it came to again; each Pool
// accounts for every value. Once the group settles, each partition's
// values are handled by the one member that reads it.
func TestGroupMemberKilledMidHandler(t *testing.T) {
	t.Parallel() // it waits on processes and takeovers, not on the CPU
	srv := natstest.StartServer(t, natstest.Options{})
	_, js := dial(t, srv.URL())
	const name, keys, n, holdFrom = "fault.killed", 60, 2000, 700
	pt, err := natsbridge.NewPartitioned(testCtx(t), js, name, natsbridge.JSON[Order](), faultKey,
		natsbridge.PartitionOptions{Partitions: 6, Topic: natsbridge.TopicOptions{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pt.Shutdown(context.Background()) })
	tr := newTrace()
	conf := func(member string, hold int) procConf {
		return procConf{URL: srv.URL(), Topic: name, Member: member, Takeover: 2 * time.Second, Workers: 8, HoldFrom: hold, Pace: time.Millisecond}
	}
	a := startProcMember(t, tr, conf("a", 0))
	b := startProcMember(t, tr, conf("b", holdFrom))
	c := startProcMember(t, tr, conf("c", 0))
	ms := []*procMember{a, b, c}
	eventually(t, "three members share six partitions", func() bool { return settledOn(ms, 6) })
	published := steadyPublisher(testCtx(t), pt, 1, n, keys)
	var held map[int]int
	eventually(t, "b holds a handler in flight in each of its partitions", func() bool {
		held = heldBy(tr, "b", holdFrom)
		return len(held) == 2
	})
	b.kill()
	killed := time.Now()
	ms = []*procMember{a, c}
	eventually(t, "a and c share the six partitions", func() bool { return settledOn(ms, 6) })
	settle := time.Since(killed)
	eventually(t, fmt.Sprintf("values %v (in b's handlers when it was killed) handled again", held), func() bool {
		ok := tr.handledOK()
		for _, id := range held {
			if ok[id] == 0 {
				return false
			}
		}
		return true
	})
	d := startProcMember(t, tr, conf("d", 0))
	ms = append(ms, d)
	eventually(t, "three members share six partitions again", func() bool { return settledOn(ms, 6) && len(d.partitions()) == 2 })
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	// The group has settled: what is published now is handled, each
	// partition by the member that reads it.
	owner := map[int]string{}
	for _, m := range ms {
		for _, p := range m.partitions() {
			owner[p] = m.name
		}
	}
	settledAt := time.Now().UnixNano()
	publishOrders(t, pt, n+1, n+300, keys)
	eventually(t, "every value handled", func() bool {
		ok := tr.handledOK()
		for id := 1; id <= n+300; id++ {
			if ok[id] == 0 {
				return false
			}
		}
		return true
	})
	for _, e := range tr.snapshot() {
		if e.start && e.at > settledAt && e.id > n {
			if p := pt.Partition(keyOfID(keys)(e.id)); owner[p] != e.member {
				t.Errorf("value %d of partition %d handled by %s once the group had settled with %s reading it", e.id, p, e.member, owner[p])
			}
		}
	}
	live := map[string]procStats{}
	for _, m := range ms {
		live[m.name] = m.stop(t)
	}
	checkGroupRun(t, tr, n+300, keys, live, false)
	logFault(t, "group of 3 on 6 partitions, b killed in its handlers of %v: settled %v after; a fourth joined", held, settle.Round(time.Millisecond))
}

// TestGroupKilledDuringRebalance: members a and b read six partitions
// while values are published, a with a handler held in each of its
// partitions; member c joins, and a is killed (SIGKILL) while it hands a
// partition over to c (waiting for its held handler); then member d
// joins and is killed the moment it reads a partition. On one server and
// on a 3-node cluster. Every value is handled; no key is handled by two
// members at once, nor back in time; the values handled twice are
// counted; the survivors settle, each partition read by one of them.
func TestGroupKilledDuringRebalance(t *testing.T) {
	t.Parallel() // it waits on processes and takeovers, not on the CPU
	for _, server := range []string{"single", "cluster"} {
		t.Run(server, func(t *testing.T) {
			var url string
			replicas := 1
			if server == "single" {
				url = natstest.StartServer(t, natstest.Options{}).URL()
			} else {
				url, replicas = natstest.StartCluster(t, 3, natstest.Options{}).URL(), 3
			}
			_, js := dial(t, url)
			const name, keys, n, holdFrom = "fault.churn", 60, 3000, 600
			pt, err := natsbridge.NewPartitioned(testCtx(t), js, name, natsbridge.JSON[Order](), faultKey,
				natsbridge.PartitionOptions{Partitions: 6, Topic: natsbridge.TopicOptions{Logger: quiet, Replicas: replicas}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = pt.Shutdown(context.Background()) })
			tr := newTrace()
			conf := func(member string, hold int) procConf {
				return procConf{URL: url, Topic: name, Member: member, Takeover: 2 * time.Second, Workers: 8, Pace: time.Millisecond, HoldFrom: hold}
			}
			a := startProcMember(t, tr, conf("a", holdFrom))
			b := startProcMember(t, tr, conf("b", 0))
			eventually(t, "a and b share six partitions", func() bool { return settledOn([]*procMember{a, b}, 6) })
			published := steadyPublisher(testCtx(t), pt, 1, n, keys)
			eventually(t, "a holds a handler in each of its three partitions", func() bool { return len(heldBy(tr, "a", holdFrom)) == 3 })
			c := startProcMember(t, tr, conf("c", 0))
			eventually(t, "a hands a partition over to c", func() bool { return len(a.partitions()) < 3 })
			a.kill() // while it waits for its held handler to hand the partition over
			eventually(t, "b and c share the six partitions", func() bool { return settledOn([]*procMember{b, c}, 6) })
			eventually(t, "half handled", func() bool { return len(tr.handledOK()) >= n/2 })
			d := startProcMember(t, tr, conf("d", 0))
			eventually(t, "d reads a partition", func() bool { return len(d.partitions()) > 0 })
			d.kill() // while it takes its share over
			ms := []*procMember{b, c}
			eventually(t, "b and c share the six partitions again", func() bool { return settledOn(ms, 6) })
			if err := <-published; err != nil {
				t.Fatal(err)
			}
			eventually(t, "every value handled", func() bool {
				ok := tr.handledOK()
				for id := 1; id <= n; id++ {
					if ok[id] == 0 {
						return false
					}
				}
				return true
			})
			live := map[string]procStats{}
			for _, m := range ms {
				live[m.name] = m.stop(t)
			}
			checkGroupRun(t, tr, n, keys, live, false)
			t.Logf("b: %+v; c: %+v", live["b"].Member, live["c"].Member)
		})
	}
}

// TestDurableShutdownBoundedByCtx: a durable watcher's Shutdown returns by
// its ctx's end with the server gone (killed) and a value outstanding:
// the value comes again to the next reader, and Shutdown returns
// ctx.Err().
func TestDurableShutdownBoundedByCtx(t *testing.T) {
	t.Parallel() // it waits on timeouts, not on the CPU
	const bound, slack = time.Second, 500 * time.Millisecond
	srv := natstest.StartServer(t, natstest.Options{})
	_, js := dial(t, srv.URL())
	topic := newTopic(t, js, "fault.durable.bounded", natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	publishAll(t, topic, 1, 10)
	if _, err := w.Next(testCtx(t)); err != nil { // outstanding: not done
		t.Fatal(err)
	}
	srv.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	began := time.Now()
	err := w.Shutdown(ctx)
	if took := time.Since(began); took > bound+slack {
		t.Errorf("Watcher.Shutdown returned %v after its ctx's start (ctx of %v), with the server killed: it hung past its ctx by %v", took.Round(time.Millisecond), bound, (took - bound).Round(time.Millisecond))
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Watcher.Shutdown = %v, want context.DeadlineExceeded (a value was outstanding)", err)
	}
}

// TestGroupSlowMemberKeepsPartitions: members a and b (processes) share
// four partitions; a's handlers of one value in each of its partitions
// are held for three takeover times (the first it begins), and its Pool,
// with a Window of 16, stops reading behind them. A member that is alive but slow keeps its
// partitions: b begins none of a's values meanwhile, the group does not
// rebalance, and once a's handlers return every value is handled once,
// nothing redelivered.
func TestGroupSlowMemberKeepsPartitions(t *testing.T) {
	t.Parallel() // it waits on processes and takeovers, not on the CPU
	srv := natstest.StartServer(t, natstest.Options{})
	_, js := dial(t, srv.URL())
	const name, keys, n, holdFrom = "fault.keeps", 40, 1000, 100
	const takeover = 2 * time.Second
	pt, err := natsbridge.NewPartitioned(testCtx(t), js, name, natsbridge.JSON[Order](), faultKey,
		natsbridge.PartitionOptions{Partitions: 4, Topic: natsbridge.TopicOptions{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pt.Shutdown(context.Background()) })
	tr := newTrace()
	a := startProcMember(t, tr, procConf{URL: srv.URL(), Topic: name, Member: "a", Takeover: takeover, Workers: 8, HoldFrom: holdFrom, Window: 16})
	b := startProcMember(t, tr, procConf{URL: srv.URL(), Topic: name, Member: "b", Takeover: takeover, Workers: 8})
	ms := []*procMember{a, b}
	eventually(t, "a and b share four partitions", func() bool { return settledOn(ms, 4) })
	aParts := a.partitions()
	a.send(t, "stats")
	eventually(t, "a reports its stats", func() bool { _, ok := a.lastStats(); return ok })
	before, _ := a.lastStats()
	publishOrders(t, pt, 1, n, keys)
	eventually(t, "a holds a handler, and its Pool stops reading behind it", func() bool {
		if len(heldBy(tr, "a", holdFrom)) == 0 {
			return false
		}
		a.send(t, "stats")
		st, ok := a.lastStats()
		return ok && st.Pool.Paused
	})
	heldAt := time.Now()
	inA := func(e hevent) bool { return slices.Contains(aParts, pt.Partition(keyOfID(keys)(e.id))) }
	for time.Since(heldAt) < 3*takeover && !tr.began("b", inA) {
		time.Sleep(10 * time.Millisecond) // a bounded observation of what must not happen
	}
	if tr.began("b", inA) {
		t.Errorf("b began a value of a's partitions %v while a was alive, its handlers slow (%v after they were held; takeover %v)", aParts, time.Since(heldAt).Round(time.Millisecond), takeover)
	}
	if got := a.partitions(); !slices.Equal(got, aParts) {
		t.Errorf("a reads %v after its slow handlers, read %v before: a live member keeps its partitions", got, aParts)
	}
	a.send(t, "release")
	eventually(t, "every value handled", func() bool {
		ok := tr.handledOK()
		for id := 1; id <= n; id++ {
			if ok[id] == 0 {
				return false
			}
		}
		return true
	})
	live := map[string]procStats{"a": a.stop(t), "b": b.stop(t)}
	checkGroupRun(t, tr, n, keys, live, false)
	for id, k := range tr.handledOK() {
		if k != 1 {
			t.Errorf("value %d handled %d times, want once: no member died", id, k)
		}
	}
	if st := live["a"]; st.Pool.Pauses == 0 || st.Member.Redelivered != 0 || st.Member.Rebalances != before.Member.Rebalances {
		t.Errorf("a's Stats: Pool %+v, member %+v; want its Pool paused behind the held values, nothing redelivered, no rebalance since the group settled (%d)", st.Pool, st.Member, before.Member.Rebalances)
	}
}

// TestDeadLetterNotStoredHandlerNotRunAgain: a value whose handler fails
// MaxAttempts (3) times is given up; its dead letter cannot be stored
// (the dead-letter topic's stream was deleted). The Pool tries to store
// the dead letter again, but the value was handled its MaxAttempts times:
// its handler must not run again ("after Options.MaxAttempts attempts ...
// the value is given up as a dead letter"; a handler's side effects are
// not repeated to store a dead letter).
func TestDeadLetterNotStoredHandlerNotRunAgain(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "fault.dlgone", natsbridge.TopicOptions{})
	dlq := newTopicOf(t, js, "fault.dlgone.dead", natsbridge.JSON[natsbridge.DeadLetter](), natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "d", DeadLetters: dlq})
	if err := dlq.Delete(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	calls := 0
	p := handle.New(w, func(o Order) int { return o.ID }, func(ctx context.Context, o Order) error {
		mu.Lock()
		calls++
		mu.Unlock()
		return errors.New("card declined")
	}, handle.Options{Workers: 1, MaxAttempts: 3, RetryMin: 20 * time.Millisecond, RetryMax: 40 * time.Millisecond, Logger: quiet})
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	publishAll(t, topic, 1, 1)
	eventually(t, "three attempts", func() bool { mu.Lock(); defer mu.Unlock(); return calls >= 3 })
	// The dead letter's store is retried with the Pool's backoff (20 to
	// 40ms): a second is many retries.
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // a bounded observation of what must not happen
	}
	mu.Lock()
	got := calls
	mu.Unlock()
	st := p.Stats()
	if got != 3 {
		t.Errorf("the handler ran %d times, want MaxAttempts (3): storing the dead letter failed, and the Pool handled the value again each time (Stats %+v)", got, st)
	}
	checkConservedPool(t, st)
}

// TestGroupRecordsLeaderKilled: on a 3-node cluster, two member processes
// share three partitions (every stream with three replicas) while values
// are published; the leader of the bucket that holds the group's
// membership and the partitions' records (leases) is killed, and no
// write to it is answered until a new leader is elected, longer than the
// takeover time. The group goes on: every value is handled, no key by
// two members at once nor back in time, the values handled twice are
// counted, and the group settles again with each partition read by one
// member.
func TestGroupRecordsLeaderKilled(t *testing.T) {
	t.Parallel() // it waits on processes and elections, not on the CPU
	c := natstest.StartCluster(t, 3, natstest.Options{})
	_, js := dial(t, c.URL())
	const name, keys, n = "fault.records", 60, 3000
	pt, err := natsbridge.NewPartitioned(testCtx(t), js, name, natsbridge.JSON[Order](), faultKey,
		natsbridge.PartitionOptions{Partitions: 3, Topic: natsbridge.TopicOptions{Logger: quiet, Replicas: 3}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pt.Shutdown(context.Background()) })
	tr := newTrace()
	conf := func(member string) procConf {
		return procConf{URL: c.URL(), Topic: name, Member: member, Takeover: 2 * time.Second, Workers: 8, Pace: time.Millisecond}
	}
	ms := []*procMember{startProcMember(t, tr, conf("a")), startProcMember(t, tr, conf("b"))}
	eventually(t, "a and b share three partitions", func() bool { return settledOn(ms, 3) })
	published := pacedPublisher(testCtx(t), pt, 1, n, keys, 100*time.Millisecond)
	eventually(t, "a tenth handled", func() bool { return len(tr.handledOK()) >= n/10 })
	bucket := "KV_herald_" + strings.ReplaceAll(name, ".", "_")
	leader := c.StreamLeader(js, bucket)
	var led []int // the partitions whose stream the killed server led too
	for i := range pt.Partitions() {
		if c.StreamLeader(js, pt.Topic(i).Stream()) == leader {
			led = append(led, i)
		}
	}
	leader.Kill()
	killed := time.Now()
	c.WaitStreamLeader(js, bucket, leader)
	elected := time.Since(killed)
	leader.Restart()
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	t.Logf("the records' leader led partitions %v too; elected after %v", led, elected.Round(time.Millisecond))
	waitHandled(t, tr, ms, n, 30*time.Second, func(id int) int { return pt.Partition(keyOfID(keys)(id)) })
	eventually(t, "a and b share three partitions again", func() bool { return settledOn(ms, 3) })
	live := map[string]procStats{}
	for _, m := range ms {
		live[m.name] = m.stop(t)
	}
	checkStreamsIntact(t, js, pt, n)
	checkGroupRun(t, tr, n, keys, live, true)
	logFault(t, "group records' leader killed (it led partitions %v too): elected after %v; a: %+v; b: %+v", led, elected.Round(time.Millisecond), live["a"].Member, live["b"].Member)
}

// waitHandled waits until every value of 1..n is handled, failing the
// test after within with what the members say: the values missing, by
// partition, and each member's partitions and counters.
func waitHandled(t *testing.T, tr *htrace, ms []*procMember, n int, within time.Duration, partOf func(id int) int) {
	t.Helper()
	missing := func() []int {
		ok := tr.handledOK()
		var out []int
		for id := 1; id <= n; id++ {
			if ok[id] == 0 {
				out = append(out, id)
			}
		}
		return out
	}
	deadline := time.Now().Add(within)
	for len(missing()) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // a bounded wait for what must happen
	}
	m := missing()
	if len(m) == 0 {
		return
	}
	for _, pm := range ms {
		pm.send(t, "stats")
	}
	time.Sleep(200 * time.Millisecond) // the members' answers, for the failure message
	var state []string
	for _, pm := range ms {
		st, _ := pm.lastStats()
		state = append(state, fmt.Sprintf("%s reads %v, member %+v, Pool %+v", pm.name, pm.partitions(), st.Member, st.Pool))
	}
	by := map[int]int{}
	for _, id := range m {
		by[partOf(id)]++
	}
	t.Fatalf("%d values not handled %v after the fault (first %v; by partition %v); %s", len(m), within, m[:min(len(m), 10)], by, strings.Join(state, "; "))
}

// TestGroupServerDownLongerThanTakeover: two member processes share three
// partitions on one server while values are published; the server is
// killed, stays down for twice the takeover time, and is started again
// (same store). The members' leases ran out meanwhile (no write could
// renew them); once the server is back the group goes on: every value is
// handled, each key in order and by one member at a time, every fate
// counted.
func TestGroupServerDownLongerThanTakeover(t *testing.T) {
	t.Parallel() // it waits on processes and a restart, not on the CPU
	srv := natstest.StartServer(t, natstest.Options{})
	_, js := dial(t, srv.URL())
	const name, keys, n = "fault.restart", 60, 2000
	const takeover = 2 * time.Second
	pt, err := natsbridge.NewPartitioned(testCtx(t), js, name, natsbridge.JSON[Order](), faultKey,
		natsbridge.PartitionOptions{Partitions: 3, Topic: natsbridge.TopicOptions{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pt.Shutdown(context.Background()) })
	tr := newTrace()
	conf := func(member string) procConf {
		return procConf{URL: srv.URL(), Topic: name, Member: member, Takeover: takeover, Workers: 8, Pace: time.Millisecond}
	}
	ms := []*procMember{startProcMember(t, tr, conf("a")), startProcMember(t, tr, conf("b"))}
	eventually(t, "a and b share three partitions", func() bool { return settledOn(ms, 3) })
	publishOrders(t, pt, 1, n/2, keys)
	eventually(t, "a tenth handled", func() bool { return len(tr.handledOK()) >= n/10 })
	srv.Kill()
	time.Sleep(2 * takeover) // the fault: the server down this long
	srv.Restart()
	publishOrders(t, pt, n/2+1, n, keys)
	waitHandled(t, tr, ms, n, 30*time.Second, func(id int) int { return pt.Partition(keyOfID(keys)(id)) })
	eventually(t, "a and b share three partitions again", func() bool { return settledOn(ms, 3) })
	live := map[string]procStats{}
	for _, m := range ms {
		live[m.name] = m.stop(t)
	}
	checkStreamsIntact(t, js, pt, n)
	checkGroupRun(t, tr, n, keys, live, true)
}

// checkStreamsIntact fails unless the partitions' streams hold n values
// in all, each at sequences 1 to its count, none deleted: so that a gap a
// watcher counts (a value the stream no longer held) is none.
func checkStreamsIntact(t *testing.T, js jetstream.JetStream, pt *natsbridge.Partitioned[Order], n int) {
	t.Helper()
	total := uint64(0)
	for i := range pt.Partitions() {
		s, err := js.Stream(testCtx(t), pt.Topic(i).Stream())
		if err != nil {
			t.Fatal(err)
		}
		st := s.CachedInfo().State
		if st.Msgs > 0 && (st.FirstSeq != 1 || st.LastSeq != st.Msgs || st.NumDeleted != 0) {
			t.Errorf("partition %d's stream holds %d values at %d..%d, %d deleted: not every value from 1 on", i, st.Msgs, st.FirstSeq, st.LastSeq, st.NumDeleted)
		}
		total += st.Msgs
	}
	if total != uint64(n) {
		t.Errorf("the partitions' streams hold %d values, want %d", total, n)
	}
}

// TestGroupMemberRejoinsUnderItsName: members a and b (processes) share
// four partitions while values are published; b, with a handler in each
// of its partitions in flight, is killed (SIGKILL) and started again
// under its name at once, within the takeover time. The doc: it finds
// its partitions as it left them, without a rebalance; the values in its
// handlers come again to it.
func TestGroupMemberRejoinsUnderItsName(t *testing.T) {
	t.Parallel() // it waits on processes and takeovers, not on the CPU
	srv := natstest.StartServer(t, natstest.Options{})
	_, js := dial(t, srv.URL())
	const name, keys, n, holdFrom = "fault.rejoin", 60, 2000, 300
	pt, err := natsbridge.NewPartitioned(testCtx(t), js, name, natsbridge.JSON[Order](), faultKey,
		natsbridge.PartitionOptions{Partitions: 4, Topic: natsbridge.TopicOptions{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pt.Shutdown(context.Background()) })
	tr := newTrace()
	conf := func(member string, hold int) procConf {
		return procConf{URL: srv.URL(), Topic: name, Member: member, Takeover: 2 * time.Second, Workers: 8, Pace: time.Millisecond, HoldFrom: hold}
	}
	a := startProcMember(t, tr, conf("a", 0))
	b := startProcMember(t, tr, conf("b", holdFrom))
	eventually(t, "a and b share four partitions", func() bool { return settledOn([]*procMember{a, b}, 4) })
	aParts, bParts := a.partitions(), b.partitions()
	a.send(t, "stats")
	eventually(t, "a reports its stats", func() bool { _, ok := a.lastStats(); return ok })
	before, _ := a.lastStats()
	published := steadyPublisher(testCtx(t), pt, 1, n, keys)
	var held map[int]int
	eventually(t, "b holds a handler in each of its partitions", func() bool {
		held = heldBy(tr, "b", holdFrom)
		return len(held) == len(bParts)
	})
	b.kill()
	b2 := startProcMemberAs(t, tr, conf("b", 0), "b again")
	ms := []*procMember{a, b2}
	eventually(t, "b, again, reads its partitions", func() bool { return slices.Equal(b2.partitions(), bParts) })
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	waitHandled(t, tr, ms, n, 30*time.Second, func(id int) int { return pt.Partition(keyOfID(keys)(id)) })
	if got := a.partitions(); !slices.Equal(got, aParts) {
		t.Errorf("a reads %v, read %v before b came back: a rebalance", got, aParts)
	}
	ok := map[int]bool{}
	for _, e := range tr.snapshot() {
		if !e.start && e.ok && e.member == b2.name {
			ok[e.id] = true
		}
	}
	for p, id := range held {
		if !ok[id] {
			t.Errorf("value %d (partition %d), in b's handler when it was killed, was not handled by b when it came back", id, p)
		}
	}
	live := map[string]procStats{}
	for _, m := range ms {
		live[m.name] = m.stop(t)
	}
	if st := live["a"]; st.Member.Rebalances != before.Member.Rebalances {
		t.Errorf("a rebalanced %d times while b came back under its name, want none", st.Member.Rebalances-before.Member.Rebalances)
	}
	checkStreamsIntact(t, js, pt, n)
	checkGroupRun(t, tr, n, keys, live, false)
}

// TestGroupCleanChurnHandlesEachValueOnce: members a and b (processes)
// read six partitions while values are published; members c and d join
// and leave cleanly, one after the other, each once it has handled
// values. Clean hand-overs repeat nothing: every value is handled exactly
// once, each key in order and by one member at a time.
func TestGroupCleanChurnHandlesEachValueOnce(t *testing.T) {
	t.Parallel() // it waits on processes and hand-overs, not on the CPU
	srv := natstest.StartServer(t, natstest.Options{})
	_, js := dial(t, srv.URL())
	const name, keys, n = "fault.cleanchurn", 60, 4000
	pt, err := natsbridge.NewPartitioned(testCtx(t), js, name, natsbridge.JSON[Order](), faultKey,
		natsbridge.PartitionOptions{Partitions: 6, Topic: natsbridge.TopicOptions{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pt.Shutdown(context.Background()) })
	tr := newTrace()
	conf := func(member string) procConf {
		return procConf{URL: srv.URL(), Topic: name, Member: member, Takeover: 2 * time.Second, Workers: 8, Pace: time.Millisecond}
	}
	a, b := startProcMember(t, tr, conf("a")), startProcMember(t, tr, conf("b"))
	eventually(t, "a and b share six partitions", func() bool { return settledOn([]*procMember{a, b}, 6) })
	published := pacedPublisher(testCtx(t), pt, 1, n, keys, 50*time.Millisecond)
	live := map[string]procStats{}
	for _, name := range []string{"c", "d"} {
		m := startProcMember(t, tr, conf(name))
		eventually(t, name+" handles values", func() bool { return tr.okBy(name) >= 50 })
		live[name] = m.stop(t)
	}
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	ms := []*procMember{a, b}
	waitHandled(t, tr, ms, n, 30*time.Second, func(id int) int { return pt.Partition(keyOfID(keys)(id)) })
	for _, m := range ms {
		live[m.name] = m.stop(t)
	}
	checkGroupRun(t, tr, n, keys, live, false)
	// Clean hand-overs repeat nothing; only a consumer lost meanwhile (a
	// heartbeat missed on a loaded machine) may, and what it repeats is
	// counted (checkGroupRun holds the values handled twice to it).
	var redelivered uint64
	for _, st := range live {
		redelivered += st.Member.Redelivered
	}
	twice := 0
	for id, k := range tr.handledOK() {
		if k != 1 {
			twice++
			if twice <= 5 && redelivered == 0 {
				t.Errorf("value %d handled %d times, none counted redelivered: a hand-over repeated it", id, k)
			}
		}
	}
	if twice > 0 {
		t.Logf("%d values handled more than once, %d counted redelivered (a consumer lost meanwhile)", twice, redelivered)
	}
}

// TestGroupMemberCountersNeverGoBack: member x (a process) reads four
// partitions and is killed (SIGKILL) with a handler in flight in each;
// member a then takes the four over, and counts in Redelivered the
// values that came to it again. Member c joins, takes its share, and
// leaves cleanly: its partitions come back to a. MemberStats are
// counters: a's Redelivered (and HandedBack, Gaps) never go down, and
// still count what came to a again before c joined.
func TestGroupMemberCountersNeverGoBack(t *testing.T) {
	t.Parallel() // it waits on processes and takeovers, not on the CPU
	srv := natstest.StartServer(t, natstest.Options{})
	_, js := dial(t, srv.URL())
	const name, keys, n = "fault.counters", 40, 400
	pt, err := natsbridge.NewPartitioned(testCtx(t), js, name, natsbridge.JSON[Order](), faultKey,
		natsbridge.PartitionOptions{Partitions: 4, Topic: natsbridge.TopicOptions{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pt.Shutdown(context.Background()) })
	tr := newTrace()
	conf := func(member string, hold int) procConf {
		return procConf{URL: srv.URL(), Topic: name, Member: member, Takeover: 2 * time.Second, Workers: 8, Pace: time.Millisecond, HoldFrom: hold}
	}
	x := startProcMember(t, tr, conf("x", 1))
	eventually(t, "x reads four partitions", func() bool { return len(x.partitions()) == 4 })
	publishOrders(t, pt, 1, n, keys)
	eventually(t, "x holds a handler in each partition", func() bool { return len(heldBy(tr, "x", 1)) == 4 })
	x.kill()
	a := startProcMember(t, tr, conf("a", 0))
	waitHandled(t, tr, []*procMember{a}, n, 30*time.Second, func(id int) int { return pt.Partition(keyOfID(keys)(id)) })
	stats := func() procStats {
		t.Helper()
		a.mu.Lock()
		k := len(a.stats)
		a.mu.Unlock()
		a.send(t, "stats")
		eventually(t, "a reports its stats", func() bool { a.mu.Lock(); defer a.mu.Unlock(); return len(a.stats) > k })
		st, _ := a.lastStats()
		return st
	}
	first := stats()
	if first.Member.Redelivered < 4 {
		t.Fatalf("a's Redelivered %d after taking over from x, want at least the 4 values in x's handlers", first.Member.Redelivered)
	}
	c := startProcMember(t, tr, conf("c", 0))
	eventually(t, "a and c share the four partitions", func() bool { return settledOn([]*procMember{a, c}, 4) })
	publishOrders(t, pt, n+1, n+100, keys)
	waitHandled(t, tr, []*procMember{a, c}, n+100, 30*time.Second, func(id int) int { return pt.Partition(keyOfID(keys)(id)) })
	c.stop(t)
	eventually(t, "a reads the four partitions again", func() bool { return len(a.partitions()) == 4 })
	publishOrders(t, pt, n+101, n+200, keys)
	waitHandled(t, tr, []*procMember{a}, n+200, 30*time.Second, func(id int) int { return pt.Partition(keyOfID(keys)(id)) })
	last := stats()
	if last.Member.Redelivered < first.Member.Redelivered || last.Member.HandedBack < first.Member.HandedBack || last.Member.Gaps < first.Member.Gaps {
		t.Errorf("a's counters went back: Redelivered %d → %d, HandedBack %d → %d, Gaps %d → %d, once partitions it had handed over came back to it",
			first.Member.Redelivered, last.Member.Redelivered, first.Member.HandedBack, last.Member.HandedBack, first.Member.Gaps, last.Member.Gaps)
	}
	t.Logf("a's Redelivered %d → %d", first.Member.Redelivered, last.Member.Redelivered)
	live := map[string]procStats{"a": a.stop(t)}
	again := deliveredAgain(tr.runs())
	if r := live["a"].Member.Redelivered; r < uint64(again["a"]) {
		t.Errorf("a was handed %d values a second time, and counts %d redelivered", again["a"], r)
	}
}

// TestGroupRetryAttemptsSurviveKill: a value whose handler always fails
// waits out its retries (MaxAttempts 4) in member a, which is killed
// (SIGKILL) after two attempts; member b takes the partition over and
// handles the value again. MaxAttempts is "how many times a value is
// handled, across its source's deliveries, before it is dead-lettered":
// the value is handled 4 times in all, and its dead letter says so.
func TestGroupRetryAttemptsSurviveKill(t *testing.T) {
	t.Skip("a known limit (natsbridge/README.md, Known limits): the record does not keep the attempts a member made before it died")
	t.Parallel() // it waits on processes and takeovers, not on the CPU
	srv := natstest.StartServer(t, natstest.Options{})
	_, js := dial(t, srv.URL())
	const name, dead, keys, n, failing, attempts = "fault.retrykill", "fault.retrykilldead", 10, 100, 10, 4
	pt, err := natsbridge.NewPartitioned(testCtx(t), js, name, natsbridge.JSON[Order](), faultKey,
		natsbridge.PartitionOptions{Partitions: 1, Topic: natsbridge.TopicOptions{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pt.Shutdown(context.Background()) })
	dlq := newTopicOf(t, js, dead, natsbridge.JSON[natsbridge.DeadLetter](), natsbridge.TopicOptions{})
	tr := newTrace()
	conf := func(member string) procConf {
		return procConf{URL: srv.URL(), Topic: name, Member: member, Takeover: 2 * time.Second, Workers: 4,
			Fail: []int{failing}, RetryMin: 400 * time.Millisecond, MaxAttempts: attempts, DeadLetters: dead}
	}
	a := startProcMember(t, tr, conf("a"))
	eventually(t, "a reads the partition", func() bool { return len(a.partitions()) == 1 })
	b := startProcMember(t, tr, conf("b"))
	publishOrders(t, pt, 1, n, keys)
	runsOf := func(member string) int {
		k := 0
		for _, r := range tr.runs() {
			if r.id == failing && (member == "" || r.member == member) && r.end < 1<<62 {
				k++
			}
		}
		return k
	}
	eventually(t, "a failed the value twice", func() bool { return runsOf("a") == 2 })
	a.kill()
	eventually(t, "the value dead-lettered", func() bool {
		info, err := js.Stream(testCtx(t), dlq.Stream())
		return err == nil && info.CachedInfo().State.Msgs > 0
	})
	b.stop(t)
	dw := watchTopic(t, dlq, natsbridge.WatchOptions{From: 1})
	d, err := dw.Next(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	total := runsOf("")
	if total != attempts {
		t.Errorf("value %d was handled %d times in all (a %d, b %d), want MaxAttempts (%d): the attempts before a's death were not counted", failing, total, runsOf("a"), runsOf("b"), attempts)
	}
	if d.Attempts != total {
		t.Errorf("its dead letter says %d attempts; it was handled %d times", d.Attempts, total)
	}
}
