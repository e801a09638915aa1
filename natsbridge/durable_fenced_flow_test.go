package natsbridge_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldgo/herald/handle"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
	"github.com/nats-io/nats.go/jetstream"
)

// recordWrites blocks and unblocks writes of a topic's durable records:
// the bucket's stream takes no subject while blocked (reads still work).
type recordWrites struct {
	t        testing.TB
	js       jetstream.JetStream
	cfg      jetstream.StreamConfig
	subjects []string
}

func newRecordWrites(t testing.TB, js jetstream.JetStream, topic *natsbridge.Topic[Order]) *recordWrites {
	t.Helper()
	ctx := testCtx(t)
	var kvs jetstream.Stream
	eventually(t, "the records' bucket exists", func() bool {
		s, err := js.Stream(ctx, "KV_herald_"+topic.Stream())
		kvs = s
		return err == nil
	})
	cfg := kvs.CachedInfo().Config
	return &recordWrites{t: t, js: js, cfg: cfg, subjects: cfg.Subjects}
}

func (r *recordWrites) block() {
	r.t.Helper()
	cfg := r.cfg
	cfg.Subjects = []string{"herald.test.nowhere"}
	if _, err := r.js.UpdateStream(context.Background(), cfg); err != nil {
		r.t.Fatal(err)
	}
}

func (r *recordWrites) unblock() {
	r.t.Helper()
	cfg := r.cfg
	cfg.Subjects = r.subjects
	if _, err := r.js.UpdateStream(context.Background(), cfg); err != nil {
		r.t.Fatal(err)
	}
}

// handledLog records what a set of handlers began and finished.
type handledLog struct {
	mu       sync.Mutex
	started  []int
	finished map[int]int
}

func newHandledLog() *handledLog { return &handledLog{finished: map[int]int{}} }

func (l *handledLog) start(id int) {
	l.mu.Lock()
	l.started = append(l.started, id)
	l.mu.Unlock()
}

func (l *handledLog) finish(id int) {
	l.mu.Lock()
	l.finished[id]++
	l.mu.Unlock()
}

func (l *handledLog) missing(n int) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int
	for i := 1; i <= n; i++ {
		if l.finished[i] == 0 {
			out = append(out, i)
		}
	}
	return out
}

// twice returns how many handler starts were of a value begun before.
func (l *handledLog) twice() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[int]bool{}
	n := 0
	for _, id := range l.started {
		if seen[id] {
			n++
		}
		seen[id] = true
	}
	return n
}

// firstStarts returns the ids in the order their first start came.
func (l *handledLog) firstStarts() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[int]bool{}
	var out []int
	for _, id := range l.started {
		if !seen[id] {
			out = append(out, id)
		}
		seen[id] = true
	}
	return out
}

// keyOrderErr reports the first value of a key begun after a later one.
func keyOrderErr(started []int) string {
	last := map[string]int{}
	for _, id := range started {
		k := poolKey(Order{ID: id})
		if id < last[k] {
			return fmt.Sprintf("value %d of key %s began after %d", id, k, last[k])
		}
		last[k] = id
	}
	return ""
}

// waitAll waits, bounded, until every value 1..n finished in l.
func waitAll(t *testing.T, l *handledLog, n int, bound time.Duration, stats func() string) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for len(l.missing(n)) > 0 {
		if time.Now().After(deadline) {
			m := l.missing(n)
			t.Fatalf("after %v, %d values of %d never handled: %v (%s)", bound, len(m), n, m[:min(len(m), 20)], stats())
		}
		time.Sleep(20 * time.Millisecond) // a bounded poll of the handlers' record
	}
}

// TestDurablePoolFencedRepeatedlyWhileValuesFlow: a handle.Pool (4
// workers, keyed, handlers of a few ms) reads a durable watcher while
// values are published; the record's writes are blocked long enough to
// fence the reader, then unblocked, four times over. The reader resumes
// each time: every value is handled, each key's values begin in order,
// values begun twice are no more than Redelivered.
func TestDurablePoolFencedRepeatedlyWhileValuesFlow(t *testing.T) {
	t.Parallel() // it waits out leases and faults, not on the CPU
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := testCtx(t)
	const n = 400
	rec := &logRecorder{}
	topic := newTopic(t, js, "fenced.fence.pool", natsbridge.TopicOptions{Logger: rec.Logger()})
	defer func() { t.Log(rec.String()) }()
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	log := newHandledLog()
	p := handle.New(w, poolKey, func(ctx context.Context, o Order) error {
		log.start(o.ID)
		time.Sleep(time.Duration(rand.IntN(4000)) * time.Microsecond) // the handler's work
		log.finish(o.ID)
		return nil
	}, handle.Options{Workers: 4, Logger: quiet})
	defer p.Shutdown(context.Background())
	publishAll(t, topic, 1, 10)
	waitAll(t, log, 10, 20*time.Second, func() string { return fmt.Sprintf("%+v", w.Stats()) })
	rw := newRecordWrites(t, js, topic)
	published := publishSteadily(t, ctx, topic, 11, n)
	for round := range 6 {
		back := w.Stats().HandedBack
		rw.block()
		// fenced: it holds values back, or its lease ran out (3/4 of 2s)
		time.Sleep(time.Duration(1500+rand.IntN(2500)) * time.Millisecond) // a fault's length, not a synchronisation
		t.Logf("round %d fenced: handed back %d", round, w.Stats().HandedBack-back)
		rw.unblock()
		t.Logf("round %d: %+v", round, w.Stats())
		time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond) // a random moment, not a synchronisation
	}
	<-published
	waitAll(t, log, n, 30*time.Second, func() string { return fmt.Sprintf("%+v", w.Stats()) })
	st := w.Stats()
	if e := keyOrderErr(log.firstStarts()); e != "" {
		t.Errorf("key order: %s (Stats %+v)", e, st)
	}
	if e := keyOrderErr(log.started); e != "" {
		t.Logf("key order counting values begun again: %s", e)
	}
	if tw := log.twice(); uint64(tw) > st.Redelivered {
		t.Errorf("%d values begun twice, Redelivered %d (Stats %+v)", tw, st.Redelivered, st)
	}
	t.Logf("twice %d, Stats %+v", log.twice(), st)
}

// fenceReader reads a durable watcher with Receive, handling each value in a
// goroutine of a small set that takes up to slow per value (Done after).
type fenceReader struct {
	w       *natsbridge.Watcher[Order]
	log     *handledLog
	stopped chan struct{}
}

func startFenceReader(t *testing.T, ctx context.Context, w *natsbridge.Watcher[Order], slow time.Duration, all *handledLog) *fenceReader {
	r := &fenceReader{w: w, log: newHandledLog(), stopped: make(chan struct{})}
	work := make(chan handle.Delivery[Order], 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for d := range work {
				if d.Err != nil {
					w.Done(d.Seq)
					continue
				}
				r.log.start(d.Value.ID)
				all.start(d.Value.ID)
				if slow > 0 {
					time.Sleep(time.Duration(rand.Int64N(int64(slow)))) // the handler's work
				}
				r.log.finish(d.Value.ID)
				all.finish(d.Value.ID)
				w.Done(d.Seq)
			}
		})
	}
	go func() {
		defer close(r.stopped)
		defer wg.Wait()
		defer close(work)
		for {
			d, err := w.Receive(ctx)
			if err != nil {
				return
			}
			work <- d
		}
	}()
	return r
}

// TestDurableFencedWithStandby: two watchers of one durable position,
// handlers slow enough to hold values; the record's writes are blocked
// long enough to fence the active one, then unblocked, three times over,
// while values flow. Every value is handled, and the values handled
// twice are no more than the two readers' Redelivered.
func TestDurableFencedWithStandby(t *testing.T) {
	t.Parallel() // it waits out leases and faults, not on the CPU
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := testCtx(t)
	const n = 300
	rec := &logRecorder{}
	topic := newTopic(t, js, "fenced.fence.standby", natsbridge.TopicOptions{Logger: rec.Logger()})
	defer func() { t.Log(rec.String()) }()
	all := newHandledLog()
	a := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	ra := startFenceReader(t, ctx, a, 200*time.Millisecond, all)
	publishAll(t, topic, 1, 5)
	waitAll(t, all, 5, 20*time.Second, func() string { return "" })
	b := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	rb := startFenceReader(t, ctx, b, 200*time.Millisecond, all)
	rw := newRecordWrites(t, js, topic)
	published := publishSteadily(t, ctx, topic, 6, n)
	stats := func() string { return fmt.Sprintf("a %+v; b %+v", a.Stats(), b.Stats()) }
	for round := range 3 {
		rw.block()
		time.Sleep(time.Duration(1800+rand.IntN(1500)) * time.Millisecond) // a fault's length, not a synchronisation
		rw.unblock()
		t.Logf("round %d: %s", round, stats())
		time.Sleep(time.Duration(500+rand.IntN(1000)) * time.Millisecond) // a random moment, not a synchronisation
	}
	<-published
	waitAll(t, all, n, 40*time.Second, stats)
	as, bs := a.Stats(), b.Stats()
	if tw := all.twice(); uint64(tw) > as.Redelivered+bs.Redelivered {
		t.Errorf("%d values begun twice, Redelivered %d+%d (%s)", tw, as.Redelivered, bs.Redelivered, stats())
	}
	for _, r := range []*fenceReader{ra, rb} {
		if e := keyOrderErr(r.log.firstStarts()); e != "" {
			t.Logf("per reader, key order: %s", e)
		}
	}
	t.Logf("twice %d, %s", all.twice(), stats())
}

// publishMixed publishes orders first..last, each of them whose ID is a
// multiple of 7 as bytes the codec cannot decode.
func publishMixed(t *testing.T, js jetstream.JetStream, topic *natsbridge.Topic[Order], first, last int) {
	t.Helper()
	ctx := testCtx(t)
	for i := first; i <= last; i++ {
		b := []byte(fmt.Sprintf(`{"id":%d}`, i))
		if i%7 == 0 {
			b = []byte("not json")
		}
		if _, err := js.Publish(ctx, topic.Name(), b); err != nil {
			t.Fatal(err)
		}
	}
}

// goodMissing returns the IDs 1..n, not multiples of 7, never finished.
func goodMissing(l *handledLog, n int) []int {
	var out []int
	for _, id := range l.missing(n) {
		if id%7 != 0 {
			out = append(out, id)
		}
	}
	return out
}

// TestDurableStoppedWhileFencedWithPoison: a durable reader with slow
// handlers and poison messages among its values is fenced (its record's
// writes blocked) and stopped while fenced; once the writes work again a
// new reader of the position handles every value the first did not
// finish: none lost, none stalled, those handled twice counted.
func TestDurableStoppedWhileFencedWithPoison(t *testing.T) {
	t.Parallel() // it waits out leases and faults, not on the CPU
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := testCtx(t)
	const n = 120
	rec := &logRecorder{}
	topic := newTopic(t, js, "fenced.fence.stop", natsbridge.TopicOptions{Logger: rec.Logger()})
	defer func() {
		if t.Failed() {
			t.Log(rec.String())
		}
	}()
	all := newHandledLog()
	a := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	ra := startFenceReader(t, ctx, a, 150*time.Millisecond, all)
	publishMixed(t, js, topic, 1, 5)
	eventually(t, "first values handled", func() bool { return len(goodMissing(all, 5)) == 0 })
	rw := newRecordWrites(t, js, topic)
	publishMixed(t, js, topic, 6, 60)
	rw.block()
	publishMixed(t, js, topic, 61, 90)
	eventually(t, "fenced: values held back", func() bool { return a.Stats().HandedBack > 0 })
	a.Stop()
	t.Logf("a stopped: %+v", a.Stats())
	rw.unblock()
	<-ra.stopped
	b := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	rb := startFenceReader(t, ctx, b, 10*time.Millisecond, all)
	publishMixed(t, js, topic, 91, n)
	deadline := time.Now().Add(30 * time.Second)
	for len(goodMissing(all, n)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // a bounded poll of the handlers' record
	}
	as, bs := a.Stats(), b.Stats()
	if m := goodMissing(all, n); len(m) > 0 {
		t.Fatalf("%d values never handled: %v (a %+v; b %+v)", len(m), m, as, bs)
	}
	if tw := all.twice(); uint64(tw) > as.Redelivered+bs.Redelivered {
		t.Errorf("%d values begun twice, Redelivered %d+%d (a %+v; b %+v)", tw, as.Redelivered, bs.Redelivered, as, bs)
	}
	if e := keyOrderErr(rb.log.firstStarts()); e != "" {
		t.Logf("b: %s", e)
	}
	t.Logf("twice %d; a %+v; b %+v", all.twice(), as, bs)
}

// TestGroupRecordsUnwritableWhileMemberJoins: member a reads four
// partitions while values flow; the records of partitions 0 and 1 take
// no write (membership keys still do), long enough to fence a's readers
// of them, and member b joins meanwhile, so that partitions move while
// their records are out of reach; then the records take writes again.
// Every value is handled; no key by two members at once, nor out of
// order in a member, nor back in time; the values that came again are
// counted in Redelivered.
func TestGroupRecordsUnwritableWhileMemberJoins(t *testing.T) {
	t.Parallel() // it waits out leases and faults, not on the CPU
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	const name, keys, n = "fenced.group.fence", 40, 1500
	pt := newPartitioned(t, js, name, 4)
	tr := newTrace()
	work := func(ctx context.Context, o Order) error {
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond) // the handler's work
		return nil
	}
	a := joinRecorded(t, s, name, "a", tr, work, handle.Options{Workers: 4}, natsbridge.GroupOptions{})
	eventually(t, "a reads four partitions", func() bool { return len(a.m.Stats().Partitions) == 4 })
	published := pacedPublisher(testCtx(t), pt, 1, n, keys, 400*time.Millisecond)
	eventually(t, "a handles values", func() bool { return tr.okBy("a") >= 100 })
	bucket := "KV_herald_" + strings.ReplaceAll(name, ".", "_")
	kvs, err := js.Stream(testCtx(t), bucket)
	if err != nil {
		t.Fatal(err)
	}
	cfg := kvs.CachedInfo().Config
	subjects := cfg.Subjects
	prefix := "$KV.herald_" + strings.ReplaceAll(name, ".", "_") + "."
	cfg.Subjects = []string{prefix + "g.>", prefix + "p2.>", prefix + "p3.>"}
	if _, err := js.UpdateStream(testCtx(t), cfg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the lease running out, not a synchronisation
	b := joinRecorded(t, s, name, "b", tr, work, handle.Options{Workers: 4}, natsbridge.GroupOptions{})
	time.Sleep(3 * time.Second) // the fault's length, not a synchronisation
	cfg.Subjects = subjects
	if _, err := js.UpdateStream(testCtx(t), cfg); err != nil {
		t.Fatal(err)
	}
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(40 * time.Second)
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
	for len(missing()) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // a bounded poll of the handlers' record
	}
	if m := missing(); len(m) > 0 {
		t.Errorf("%d values never handled after 40s: %v (a %+v; b %+v)", len(m), m[:min(20, len(m))], a.m.Stats(), b.m.Stats())
	}
	live := map[string]procStats{}
	for _, m := range []*inMember{a, b} {
		if err := m.p.Shutdown(testCtx(t)); err != nil {
			t.Error(err)
		}
		live[m.name] = procStats{Pool: m.p.Stats(), Member: m.m.Stats()}
	}
	checkGroupRun(t, tr, n, keys, live, false)
	t.Logf("a %+v; b %+v", live["a"].Member, live["b"].Member)
}

// TestDurableRecordOverwrittenWithoutPinChange: the record of an active
// durable reader is overwritten by a writer that is no reader of the
// position (an operator's kv.Put, a record restored from a backup): its
// next write is refused for its revision, and it is fenced. With no
// other reader, and its turn never given up, the position must not stand
// still: the values published after it are handed out within a bounded
// time, in order. The reader takes the position over again from the
// value after the last acknowledged: a value it handed out (and was told
// done, its acknowledgement not sent yet) comes again, counted in
// Redelivered although the record, written over, says less.
func TestDurableRecordOverwrittenWithoutPinChange(t *testing.T) {
	t.Parallel() // it waits out leases and faults, not on the CPU
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := testCtx(t)
	rec := &logRecorder{}
	topic := newTopic(t, js, "fenced.overwritten", natsbridge.TopicOptions{Logger: rec.Logger()})
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	publishAll(t, topic, 1, 10)
	var got []int
	for len(got) < 10 {
		d, err := w.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d.Value.ID)
		w.Done(d.Seq)
	}
	restoreRecord(ctx, t, js, topic)
	publishAll(t, topic, 11, 40)
	short, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var first []int // each value once, as first handed out
	seen := map[int]bool{}
	for _, id := range got {
		first, seen[id] = append(first, id), true
	}
	for len(first) < 40 {
		d, err := w.Receive(short)
		if err != nil {
			t.Log(rec.String())
			t.Fatalf("after %d values: %v (Stats %+v): the position stands still", len(first), err, w.Stats())
		}
		got = append(got, d.Value.ID)
		if !seen[d.Value.ID] {
			first, seen[d.Value.ID] = append(first, d.Value.ID), true
		}
		w.Done(d.Seq)
	}
	st := w.Stats()
	if !slices.Equal(first, span(1, 40)) {
		t.Errorf("handed out %s; want 1..40 in order", firstDiff(first, span(1, 40)))
	}
	back := 0 // steps back: the reader reads again from its position once
	for i := 1; i < len(got); i++ {
		if got[i] != got[i-1]+1 {
			back++
		}
	}
	if twice := uint64(len(got) - len(first)); twice != st.Redelivered || back > 1 {
		t.Errorf("%d values handed out twice, Redelivered %d, %d steps back: want each repeat counted, and one step back at most (%v)", twice, st.Redelivered, back, got)
		t.Log(rec.String())
	}
	t.Logf("%d handed out twice; Stats %+v", len(got)-len(first), st)
}

// TestDurableFencedReaderStopsBeforeNextStarts: reader a, after a burst
// that makes its reservation large, slows down (a value per 50ms); its
// record's writes are blocked until its lease runs out (it is fenced and
// gives its turn up), then work again, and the reader the server serves
// next (standby b, or a again) reads on from the position once a's lease
// has ended. The record's contract: a reader whose lease ran out hands
// nothing out past it, so that it stops before the next one starts. a
// hands out no value after b handed out its first.
func TestDurableFencedReaderStopsBeforeNextStarts(t *testing.T) {
	t.Parallel() // it waits out leases and faults, not on the CPU
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := testCtx(t)
	const n = 1000
	rec := &logRecorder{}
	// a and b read through a Topic each, whose lines name the reader: a
	// failure's log tells them apart.
	topic := newTopic(t, js, "fenced.fence.overlap", natsbridge.TopicOptions{Logger: rec.Logger().With("reader", "a")})
	topicB := newTopic(t, js, "fenced.fence.overlap", natsbridge.TopicOptions{Logger: rec.Logger().With("reader", "b")})
	a := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	publishAll(t, topic, 1, 1)
	if _, err := a.Next(ctx); err != nil {
		t.Fatal(err)
	}
	b := watch(t, topicB, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	t0 := time.Now()
	type handOut struct {
		id int
		at time.Time
	}
	var mu sync.Mutex
	var byA, byB []handOut
	byA = append(byA, handOut{1, t0})
	slow := make(chan struct{})
	aDone := make(chan struct{})
	go func() {
		defer close(aDone)
		for {
			o, err := a.Next(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			byA = append(byA, handOut{o.ID, time.Now()})
			mu.Unlock()
			select {
			case <-slow:
				time.Sleep(50 * time.Millisecond) // the handler's work
			default:
			}
		}
	}()
	bDone := make(chan struct{})
	go func() {
		defer close(bDone)
		for {
			o, err := b.Next(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			byB = append(byB, handOut{o.ID, time.Now()})
			mu.Unlock()
		}
	}()
	publishAll(t, topic, 2, 600)
	eventually(t, "a handed out the burst", func() bool { mu.Lock(); defer mu.Unlock(); return len(byA) >= 599 })
	close(slow)
	publishAll(t, topic, 601, n)
	rw := newRecordWrites(t, js, topic)
	rw.block()
	blockedAt := time.Now()
	// Fenced as its lease runs out; or, on a loaded machine, already taken
	// over by b, if a's turn lapsed first: either way a stops.
	eventually(t, "a fenced", func() bool { return strings.Contains(rec.String(), "this reader stops handing out") })
	t.Logf("a fenced %v after the writes were blocked", time.Since(blockedAt))
	rw.unblock()
	all := func() bool {
		mu.Lock()
		defer mu.Unlock()
		seen := map[int]bool{}
		for _, h := range append(append([]handOut(nil), byA...), byB...) {
			seen[h.id] = true
		}
		return len(seen) >= n
	}
	for deadline := time.Now().Add(40 * time.Second); !all(); {
		if time.Now().After(deadline) {
			mu.Lock()
			t.Log(rec.String())
			t.Fatalf("not every value handed out after 40s: a %d (%+v), b %d (%+v)", len(byA), a.Stats(), len(byB), b.Stats())
		}
		time.Sleep(20 * time.Millisecond) // a bounded poll
	}
	// What a still holds, it may hand out: watch it do so, bounded.
	for deadline := time.Now().Add(8 * time.Second); a.Stats().Queued > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // a bounded observation
	}
	a.Stop()
	b.Stop()
	<-aDone
	<-bDone
	mu.Lock()
	defer mu.Unlock()
	as, bs := a.Stats(), b.Stats()
	// Once a gave its turn up, the server serves the next reader to ask:
	// b, or a again, which then resumes its own record (no other reader
	// wrote it) and hands out each value once; then nothing overlaps.
	var after []int
	if len(byB) > 0 {
		firstB := byB[0].at
		for _, h := range byA {
			if h.at.After(firstB) {
				after = append(after, h.id)
			}
		}
	} else {
		t.Logf("a was served again and resumed its record; b read nothing")
	}
	count := map[int]int{}
	for _, h := range append(append([]handOut(nil), byA...), byB...) {
		count[h.id]++
	}
	twice := 0
	for _, c := range count {
		if c > 1 {
			twice++
		}
	}
	if bs.Gaps != 0 || as.Gaps != 0 {
		t.Errorf("gaps counted on an intact stream: a %d, b %d", as.Gaps, bs.Gaps)
	}
	if uint64(twice) > as.Redelivered+bs.Redelivered {
		t.Errorf("%d values handed out twice, Redelivered %d+%d", twice, as.Redelivered, bs.Redelivered)
	}
	if len(after) > 0 {
		t.Errorf("a handed out %d values (%d..%d) after b handed out its first (%d), the last %v after it; a %+v; b %+v",
			len(after), after[0], after[len(after)-1], byB[0].id, byA[len(byA)-1].at.Sub(byB[0].at), as, bs)
	}
	t.Logf("twice %d; a %d values %+v; b %d values %+v", twice, len(byA), as, len(byB), bs)
}

// publishSteadily publishes first..last in the background, ten values
// every 300ms, and closes the channel it returns once done.
func publishSteadily(t *testing.T, ctx context.Context, topic *natsbridge.Topic[Order], first, last int) <-chan struct{} {
	published := make(chan struct{})
	go func() {
		defer close(published)
		pub, err := topic.Publisher(natsbridge.PublisherOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		for i := first; i <= last; i++ {
			if err := pub.Publish(ctx, Order{ID: i}); err != nil {
				t.Error(err)
				return
			}
			if i%10 == 0 {
				time.Sleep(300 * time.Millisecond) // a steady stream, not a synchronisation
			}
		}
		_ = pub.Shutdown(ctx)
	}()
	return published
}

// TestDurableRecordOverwrittenThenHandedOn: a reader fenced by its record
// written over by hand (handed: 10) takes its position back, then stops
// with values it handed out not done: the next reader gets them again,
// counted in its Redelivered (the record the first one leaves covers what
// it handed out, not what the hand-written record said).
func TestDurableRecordOverwrittenThenHandedOn(t *testing.T) {
	t.Parallel() // it waits out leases, not on the CPU
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := testCtx(t)
	topic := newTopic(t, js, "fenced.overwritten.on", natsbridge.TopicOptions{})
	a := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	publishAll(t, topic, 1, 20)
	for i := 1; i <= 20; i++ {
		d, err := a.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i <= 10 {
			a.Done(d.Seq) // 11..20 outstanding
		}
	}
	kv := restoreRecord(ctx, t, js, topic)
	publishAll(t, topic, 21, 30)
	// a is fenced at its next write of the record, and takes the
	// position back: its record names it again.
	eventually(t, "a takes its position back", func() bool {
		e, err := kv.Get(ctx, "d")
		return err == nil && !strings.Contains(string(e.Value()), `"restored"`)
	})
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := a.Shutdown(short); !errors.Is(err, context.DeadlineExceeded) && err != nil {
		t.Fatalf("a.Shutdown = %v", err)
	}
	next := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	seen := map[int]bool{}
	for len(seen) < 20 { // 11..30
		d, err := next.Receive(short)
		if err != nil {
			t.Fatalf("after %d values: %v", len(seen), err)
		}
		seen[d.Value.ID] = true
		next.Done(d.Seq)
	}
	if st := next.Stats(); st.Redelivered < 10 {
		t.Errorf("the next reader's Redelivered = %d; want at least the 10 values a handed out and did not finish (11..20): %+v", st.Redelivered, st)
	}
}

// restoreRecord writes over the record of topic's durable position "d"
// by hand, as an operator restoring it from a backup would: owner
// "restored", handed 10, its lease over. It returns the bucket.
func restoreRecord(ctx context.Context, t *testing.T, js jetstream.JetStream, topic *natsbridge.Topic[Order]) jetstream.KeyValue {
	t.Helper()
	kv, err := js.KeyValue(ctx, "herald_"+topic.Stream())
	if err != nil {
		t.Fatal(err)
	}
	b := []byte(fmt.Sprintf(`{"owner":"restored","handed":10,"until":%d}`, time.Now().Add(-time.Second).UnixNano()))
	if _, err := kv.Put(ctx, "d", b); err != nil {
		t.Fatal(err)
	}
	return kv
}
