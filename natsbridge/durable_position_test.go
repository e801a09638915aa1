package natsbridge_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// durableReader reads a watcher in a goroutine, keeping what it read.
type durableReader struct {
	w    *natsbridge.Watcher[Order]
	mu   sync.Mutex
	got  []int
	seqs []uint64
	done chan struct{}
}

func readDurableWatcher(w *natsbridge.Watcher[Order], pace time.Duration) *durableReader {
	r := &durableReader{w: w, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for o := range w.All() {
			r.mu.Lock()
			r.got = append(r.got, o.ID)
			r.seqs = append(r.seqs, w.Seq())
			r.mu.Unlock()
			if pace > 0 {
				time.Sleep(pace) // the application's work on the value
			}
		}
	}()
	return r
}

func (r *durableReader) read() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// TestDurableSameProcess: two durable watchers with one name in the
// same process, on the same connection. One reads, the other stands by;
// a clean Stop of the active one hands over at once and nothing is read
// twice (Redelivered stays 0); together they read 1..n once, in order.
func TestDurableSameProcess(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "edge.samedurable", natsbridge.TopicOptions{})
	opts := natsbridge.WatchOptions{Durable: "billing", Takeover: 2 * time.Second}
	// Each value takes its reader 200µs or more, so that the second half
	// takes the active one 200ms at least: it is stopped in the middle.
	a := readDurableWatcher(watch(t, topic, opts), 200*time.Microsecond)
	b := readDurableWatcher(watch(t, topic, opts), 200*time.Microsecond)
	const n = 2000
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	publishN(t, p, 1, n/2)
	eventually(t, "the first half read", func() bool { return len(a.read())+len(b.read()) >= n/2 })
	active, standby := a, b
	if len(b.read()) > 0 {
		active, standby = b, a
	}
	if len(standby.read()) != 0 {
		t.Fatalf("both read while one was active: %d and %d", len(active.read()), len(standby.read()))
	}
	publishN(t, p, n/2+1, n)
	eventually(t, "the active one into the second half", func() bool { return len(active.read()) > n/2 })
	active.w.Stop()
	<-active.done
	stoppedAt := time.Now()
	eventually(t, "the standby read to the end", func() bool {
		r := standby.read()
		return len(r) > 0 && r[len(r)-1] == n
	})
	first := active.read()
	second := standby.read()
	t.Logf("active read %d, stopped at %d; standby read %d from %v; took over in %v; Redelivered %d", len(first), first[len(first)-1], len(second), second[:min(3, len(second))], time.Since(stoppedAt).Round(time.Millisecond), standby.w.Stats().Redelivered)
	if all := append(slices.Clone(first), second...); !slices.Equal(all, span(1, n)) {
		t.Errorf("together they read %s, not 1..%d once each in order", firstDiff(all, span(1, n)), n)
	}
	if standby.w.Stats().Redelivered != 0 {
		t.Errorf("after a clean Stop, Redelivered() = %d, want 0", standby.w.Stats().Redelivered)
	}
	if err := p.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// TestDurableDeletedWhileReading: DeleteDurable while a watcher reads
// the position: the watcher ends, its Err wraps ErrDurableGone, and a
// later Watch with that name begins again at its From.
func TestDurableDeletedWhileReading(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "edge.deletedurable", natsbridge.TopicOptions{Heartbeat: 500 * time.Millisecond})
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "billing", Takeover: 2 * time.Second})
	r := readDurableWatcher(w, time.Millisecond)
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	publishN(t, p, 1, 500)
	eventually(t, "some read", func() bool { return len(r.read()) >= 50 })
	if err := topic.DeleteDurable(testCtx(t), "billing"); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	select {
	case <-r.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("the watcher still reads 15s after its position was deleted (read %d)", len(r.read()))
	}
	t.Logf("ended %v after the deletion, read %d, Err %v", time.Since(deleted).Round(time.Millisecond), len(r.read()), w.Err())
	if !errors.Is(w.Err(), natsbridge.ErrDurableGone) {
		t.Errorf("Err() = %v, want ErrDurableGone", w.Err())
	}
	if got := r.read(); !slices.Equal(got, span(1, len(got))) {
		t.Errorf("read %s", firstDiff(got, span(1, len(got))))
	}
	w2 := watch(t, topic, natsbridge.WatchOptions{Durable: "billing", From: 100})
	if w2.Start() != 100 {
		t.Errorf("a new position with From 100: Start() = %d", w2.Start())
	}
	if got := take(t, w2, 3); !slices.Equal(ids(got), []int{100, 101, 102}) {
		t.Errorf("the new position read %v, want 100, 101, 102", ids(got))
	}
	if err := p.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// TestDurableFromAndStart: a durable position made with From reads
// from there; Start() reports where the position stands; a later Watch's
// From is ignored (the position is kept).
func TestDurableFromAndStart(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "edge.durablefrom", natsbridge.TopicOptions{})
	publishAll(t, topic, 1, 10)
	w, err := topic.Watch(testCtx(t), natsbridge.WatchOptions{Durable: "d", From: 5})
	if err != nil {
		t.Fatal(err)
	}
	if w.Start() != 5 {
		t.Errorf("Start() = %d, want 5", w.Start())
	}
	if got := ids(take(t, w, 6)); !slices.Equal(got, span(5, 10)) {
		t.Errorf("read %v, want 5..10", got)
	}
	w.Stop()
	publishAll(t, topic, 11, 15)
	w2 := watch(t, topic, natsbridge.WatchOptions{Durable: "d", From: 1})
	if w2.Start() != 11 {
		t.Errorf("rejoined position: Start() = %d, want 11", w2.Start())
	}
	if got := ids(take(t, w2, 5)); !slices.Equal(got, span(11, 15)) {
		t.Errorf("rejoined position read %v, want 11..15", got)
	}
	if w2.Stats().Redelivered != 0 {
		t.Errorf("Redelivered() = %d", w2.Stats().Redelivered)
	}
	// A fresh position without From on a stream with values: what follows.
	w3 := watch(t, topic, natsbridge.WatchOptions{Durable: "e"})
	if w3.Start() != 16 {
		t.Errorf("new position without From: Start() = %d, want 16", w3.Start())
	}
}

// TestDurableTakeoverValidation: Takeover below 2s, negative, or without
// Durable is an error; a durable name with a wildcard is ErrInvalidName.
func TestDurableTakeoverValidation(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "edge.takeover", natsbridge.TopicOptions{})
	for _, o := range []natsbridge.WatchOptions{
		{Durable: "d", Takeover: time.Second},
		{Durable: "d", Takeover: 2*time.Second - 1},
		{Durable: "d", Takeover: -time.Second},
		{Takeover: 3 * time.Second},
		{Durable: "a.b"},
		{Durable: "a*"},
		{Durable: "a b"},
	} {
		w, err := topic.Watch(testCtx(t), o)
		if err == nil {
			w.Stop()
			t.Errorf("Watch(%+v) = nil error", o)
		}
	}
	if n := consumers(t, js, topic.Stream()); n != 0 {
		t.Errorf("%d consumers left by refused watches", n)
	}
}

// TestDurableSlowReaderKeepsTurn: the active durable reader is slow for
// three times its takeover time, either with a handler that runs that
// long (an All loop's body) or with an application that reads nothing
// (its Block queue stays full). It keeps its turn all that while: the
// standby reads nothing, and the slow reader reads every value once, in
// order, none redelivered.
func TestDurableSlowReaderKeepsTurn(t *testing.T) {
	t.Parallel() // it waits on servers and takeover times, not on the CPU
	for _, stall := range []string{"handler", "queue"} {
		t.Run(stall, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, embedded.Options{})
			_, js1 := connect(t, s)
			_, js2 := connect(t, s)
			t1 := newTopic(t, js1, "edge.slowdurable", natsbridge.TopicOptions{Heartbeat: 500 * time.Millisecond})
			t2 := newTopic(t, js2, "edge.slowdurable", natsbridge.TopicOptions{Heartbeat: 500 * time.Millisecond})
			opts := natsbridge.WatchOptions{Durable: "slow", Takeover: 2 * time.Second, QueueLength: 16, Full: broadcast.Block}
			slowW := watch(t, t1, opts)
			const n = 500
			publishAll(t, t1, 1, 1)
			ctx := testCtx(t)
			first, err := slowW.Next(ctx) // the first watcher is the active one
			if err != nil || first.ID != 1 {
				t.Fatalf("Next = %v, %v", first.ID, err)
			}
			fastW := watch(t, t2, opts)
			fast := readDurableWatcher(fastW, 0)
			publishAll(t, t1, 2, n)
			slow := []int{first.ID}
			if stall == "handler" {
				for o := range slowW.All() {
					slow = append(slow, o.ID)
					if o.ID == 10 {
						time.Sleep(6 * time.Second) // a handler three times the takeover time
					}
					if o.ID == n {
						break
					}
				}
			} else {
				time.Sleep(6 * time.Second) // the application reads nothing: its queue stays full
				for len(slow) < n {
					o, err := slowW.Next(ctx)
					if err != nil {
						t.Fatal(err)
					}
					slow = append(slow, o.ID)
				}
				slowW.Done(slowW.Seq()) // handled: no later Next says so
			}
			if got := fast.read(); len(got) != 0 {
				t.Errorf("the standby read %d values (from %d) while the active reader lived", len(got), got[0])
			}
			if !slices.Equal(slow, span(1, n)) {
				t.Errorf("the slow reader read %s", firstDiff(slow, span(1, n)))
			}
			if r := slowW.Stats().Redelivered; r != 0 {
				t.Errorf("Redelivered = %d, want 0", r)
			}
			fastW.Stop()
			<-fast.done
		})
	}
}

// TestDurableFlushStoppedWhileWaiting: Flush waits (a Block watcher whose
// queue is full and nobody reads); Stop is called; Flush returns ErrClosed.
// The values read from the stream but not queued are counted in Dropped.
func TestDurableFlushStoppedWhileWaiting(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "edge.flushstop", natsbridge.TopicOptions{ReadAhead: 64})
	w, err := topic.Watch(testCtx(t), natsbridge.WatchOptions{QueueLength: 4, Full: broadcast.Block})
	if err != nil {
		t.Fatal(err)
	}
	const n = 500
	publishAll(t, topic, 1, n)
	flushed := make(chan error, 1)
	go func() { flushed <- w.Flush(testCtx(t)) }()
	time.Sleep(300 * time.Millisecond) // Flush is waiting for room
	w.Stop()
	select {
	case err := <-flushed:
		if !errors.Is(err, natsbridge.ErrClosed) {
			t.Errorf("Flush = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Flush still waiting 5s after Stop")
	}
	got := drain(t, w)
	t.Logf("after Stop: %d readable, Delivered %d, Dropped %d, Seq %d", len(got), w.Stats().Delivered, w.Stats().Dropped, w.Seq())
	if !slices.Equal(ids(got), span(1, len(got))) {
		t.Errorf("read %v", ids(got))
	}
	if uint64(len(got)) != w.Stats().Delivered {
		t.Errorf("read %d after Stop, Delivered %d", len(got), w.Stats().Delivered)
	}
}

var _ = context.Background

// TestDurableTakeoverMismatch: the position is made with Takeover
// 2s; two later watchers join it with the default Takeover (5s), which the
// doc says is used only when the position is created. Both stay alive and
// read; values come one every 3s. The doc: one reader at a time is
// active, the others stand by and receive nothing, until the active one
// stops, dies or stops reading. So one watcher must read every value.
func TestDurableTakeoverMismatch(t *testing.T) {
	t.Parallel() // it waits on servers and faults, not on the CPU
	for _, joined := range []time.Duration{0, 2 * time.Second} {
		t.Run("joined with Takeover "+joined.String(), func(t *testing.T) {
			t.Parallel()
			durableTakeoverMismatch(t, joined)
		})
	}
}

func durableTakeoverMismatch(t *testing.T, joined time.Duration) {
	s := startServer(t, embedded.Options{})
	_, js1 := connect(t, s)
	_, js2 := connect(t, s)
	t1 := newTopic(t, js1, "edge.mismatch", natsbridge.TopicOptions{})
	t2 := newTopic(t, js2, "edge.mismatch", natsbridge.TopicOptions{})
	maker, err := t1.Watch(testCtx(t), natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	maker.Stop()
	a := readDurableWatcher(watch(t, t1, natsbridge.WatchOptions{Durable: "d", Takeover: joined}), 0)
	b := readDurableWatcher(watch(t, t2, natsbridge.WatchOptions{Durable: "d", Takeover: joined}), 0)
	p := publisher(t, t1, natsbridge.PublisherOptions{})
	const n = 4
	for i := 1; i <= n; i++ {
		publishN(t, p, i, i)
		time.Sleep(3 * time.Second) // the pace of the values
	}
	ra, rb := a.read(), b.read()
	t.Logf("a read %v, b read %v", ra, rb)
	if len(ra) != 0 && len(rb) != 0 {
		t.Errorf("both live readers read values: a %v, b %v; the doc: one active reader, the other stands by", ra, rb)
	}
	if err := p.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// TestDurableFlushOnStandby: Flush on a durable watcher that stands by (the
// other one reads) waits, as its doc says, until the watcher is active:
// here until its context ends.
func TestDurableFlushOnStandby(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "edge.flushstandby", natsbridge.TopicOptions{Heartbeat: 500 * time.Millisecond})
	opts := natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second}
	a := readDurableWatcher(watch(t, topic, opts), 0)
	b := readDurableWatcher(watch(t, topic, opts), 0)
	publishAll(t, topic, 1, 10)
	eventually(t, "the active reader read them", func() bool { return len(a.read())+len(b.read()) == 10 })
	standby := b
	if len(b.read()) == 10 {
		standby = a
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := standby.w.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Flush on a standby durable watcher = %v, want context.DeadlineExceeded: it waits until the watcher is active", err)
	}
}

// TestDurableNothingAfterStop: a durable reader reads 100 values and
// stops with 200 more queued. It hands none of them out after its Stop
// (Next returns ErrClosed, All ends), counts them as handed back, and the
// next reader on the name reads them, from 101, none counted as
// redelivered: no reader handed them out before.
func TestDurableNothingAfterStop(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "edge.afterstop", natsbridge.TopicOptions{})
	opts := natsbridge.WatchOptions{Durable: "audit", QueueLength: 300}
	w := watch(t, topic, opts)
	publishAll(t, topic, 1, 300)
	if err := w.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := ids(take(t, w, 100)); !slices.Equal(got, span(1, 100)) {
		t.Fatalf("read %v, want 1..100", got)
	}
	w.Stop()
	if _, err := w.Next(testCtx(t)); !errors.Is(err, natsbridge.ErrClosed) {
		t.Errorf("Next after Stop = %v, want ErrClosed: a durable watcher hands out nothing after its Stop", err)
	}
	for o := range w.All() {
		t.Errorf("All after Stop gave %d", o.ID)
	}
	if st := w.Stats(); st.HandedBack != 200 || st.Acked != 100 {
		t.Errorf("Stats after Stop: HandedBack %d, Acked %d; want 200, 100", st.HandedBack, st.Acked)
	}
	next := watch(t, topic, opts)
	if got := ids(take(t, next, 200)); !slices.Equal(got, span(101, 300)) {
		t.Errorf("the next reader read %s", firstDiff(got, span(101, 300)))
	}
	if r := next.Stats().Redelivered; r != 0 {
		t.Errorf("the next reader's Redelivered = %d, want 0", r)
	}
}

// TestDurableRefusesLossyReads: a durable watcher delivers at least once,
// so Watch refuses the Drop policies, which would acknowledge values no
// handler saw, and a channel, which cannot say when a value is done; each
// error names what to use instead.
func TestDurableRefusesLossyReads(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "edge.lossy", natsbridge.TopicOptions{})
	tests := []struct {
		o    natsbridge.WatchOptions
		want string
	}{
		{natsbridge.WatchOptions{Durable: "d", Full: broadcast.DropNewest}, "broadcast.Block"},
		{natsbridge.WatchOptions{Durable: "d", Full: broadcast.DropOldest}, "broadcast.Block"},
		{natsbridge.WatchOptions{Durable: "d", Read: broadcast.ReadChannel}, "All or Next"},
		{natsbridge.WatchOptions{Durable: "my.audit"}, `durable name "my.audit" holds '.'`},
	}
	for _, tc := range tests {
		w, err := topic.Watch(testCtx(t), tc.o)
		if w != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Watch(%+v) = %v, %v; want an error holding %q", tc.o, w, err, tc.want)
		}
	}
}
