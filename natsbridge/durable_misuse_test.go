package natsbridge_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldgo/herald/handle"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestDurableDoneMisuse: Done of a sequence never handed out (0, one past
// the stream, one in the stream not yet read), Done twice, and Done on a
// watcher that is not durable do nothing: in particular, a value marked
// done before it was handed out is outstanding once it is, and comes
// again to the next reader if it is not done then.
func TestDurableDoneMisuse(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "misuse.done", natsbridge.TopicOptions{})
	plain := watch(t, topic, natsbridge.WatchOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	publishAll(t, topic, 1, 10)
	plain.Done(1) // not durable: nothing
	w.Done(0)
	w.Done(999)
	w.Done(5) // in the stream, not handed out yet
	ctx := testCtx(t)
	for want := 1; want <= 5; want++ {
		o, err := w.Next(ctx)
		if err != nil || o.ID != want {
			t.Fatalf("Next = %v, %v; want %d", o, err, want)
		}
		if want == 2 {
			w.Done(1) // done already by this Next
			w.Done(1)
		}
	}
	// 5 is handed out and not done: Done(5) before it was read did nothing.
	if st := w.Stats(); st.Outstanding != 1 {
		t.Errorf("Outstanding = %d after reading 5 with Next, want 1 (5 itself)", st.Outstanding)
	}
	sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_ = w.Shutdown(sctx) // 5 is not done: hands over at once, 5 comes again
	next := watch(t, topic, natsbridge.WatchOptions{Durable: "d"})
	if got := ids(take(t, next, 6)); !slices.Equal(got, span(5, 10)) {
		t.Errorf("the next reader read %v, want 5..10: 5 was not done", got)
	}
	w.Done(5) // after Stop and hand-over: nothing
	if st := next.Stats(); st.Redelivered != 1 {
		t.Errorf("the next reader's Redelivered = %d, want 1 (value 5)", st.Redelivered)
	}
}

// TestDurableStopInsideAll: Stop called inside an All loop body returns at
// once (it does not wait for the body), the loop ends once the body
// returns, and the values up to that one are done: the next reader reads
// on from the next, nothing again.
func TestDurableStopInsideAll(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "misuse.stopall", natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	publishAll(t, topic, 1, 10)
	var got []int
	for o := range w.All() {
		got = append(got, o.ID)
		if o.ID == 3 {
			stopped := make(chan struct{})
			go func() { w.Stop(); close(stopped) }()
			select {
			case <-stopped:
			case <-time.After(time.Second): // a failsafe bound, far below the takeover time
				t.Fatal("Stop inside the loop body waited for the body")
			}
		}
	}
	if !slices.Equal(got, span(1, 3)) {
		t.Errorf("All read %v after Stop at 3, want 1..3", got)
	}
	if err := w.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	next := watch(t, topic, natsbridge.WatchOptions{Durable: "d"})
	if got := ids(take(t, next, 7)); !slices.Equal(got, span(4, 10)) {
		t.Errorf("the next reader read %v, want 4..10", got)
	}
	if r := next.Stats().Redelivered; r != 0 {
		t.Errorf("Redelivered %d after a clean Stop, want 0", r)
	}
}

// TestDurableStopWhileHandlerRuns: Stop from another goroutine while a
// value's handler runs returns at once; the standby gets nothing while the
// handler runs (the value is not handed to two handlers), and reads on
// from the value after it as soon as it is done.
func TestDurableStopWhileHandlerRuns(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "misuse.stoprun", natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 3 * time.Second})
	publishAll(t, topic, 1, 10)
	o, err := w.Next(testCtx(t))
	if err != nil || o.ID != 1 {
		t.Fatalf("Next = %v, %v", o, err)
	}
	// The standby after w is active.
	standby := watch(t, topic, natsbridge.WatchOptions{Durable: "d"})
	w.Stop() // from "another goroutine": the handler of 1 runs on
	short, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if v, err := standby.Next(short); err == nil {
		t.Fatalf("the standby read %d while the handler of 1 ran", v.ID)
	}
	w.Done(1)
	if got := ids(take(t, standby, 9)); !slices.Equal(got, span(2, 10)) {
		t.Errorf("the standby read %v, want 2..10", got)
	}
}

// TestDurableTwoReadersOneProcess: two watchers of one durable position in
// one process, on one connection, both reading with All: together they
// read each value once, each in stream order.
func TestDurableTwoReadersOneProcess(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "misuse.two", natsbridge.TopicOptions{})
	const n = 500
	var mu sync.Mutex
	seen := map[int]int{}
	var wg sync.WaitGroup
	var ws []*natsbridge.Watcher[Order]
	for i := range 2 {
		w := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
		ws = append(ws, w)
		wg.Go(func() {
			last := 0
			for o := range w.All() {
				if o.ID <= last {
					t.Errorf("reader %d: %d after %d", i, o.ID, last)
				}
				last = o.ID
				mu.Lock()
				seen[o.ID]++
				mu.Unlock()
			}
		})
	}
	publishAll(t, topic, 1, n)
	eventually(t, "every value read", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == n
	})
	for _, w := range ws {
		if err := w.Shutdown(testCtx(t)); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
	for id, c := range seen {
		if c != 1 {
			t.Errorf("value %d read %d times", id, c)
		}
	}
}

// TestDeadLetterOfALargeValue: a value that fits in a message, but whose
// dead letter (its bytes, base64 in JSON, with its headers and error) does
// not, is still given up, its dead letter stored without its bytes but
// with where they are: the Pool does not retry storing it for ever,
// holding its key, and Redrive reads the value from its stream.
func TestDeadLetterOfALargeValue(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "misuse.large", natsbridge.TopicOptions{})
	dlq := newTopicOf(t, js, "misuse.large.dead", natsbridge.JSON[natsbridge.DeadLetter](), natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "d", DeadLetters: dlq})
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	big := Order{ID: 1, Item: strings.Repeat("x", 900_000)} // under 1 MiB; its base64 is not
	if err := p.Publish(testCtx(t), big); err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(testCtx(t), Order{ID: 2, Item: big.Item[:10]}); err != nil {
		t.Fatal(err)
	}
	pool := handle.New(w, func(o Order) int { return 0 }, func(ctx context.Context, o Order) error {
		if o.ID == 1 {
			return handle.Permanent(errors.New("no"))
		}
		return nil
	}, handle.Options{RetryMin: 10 * time.Millisecond, RetryMax: 20 * time.Millisecond, Logger: quiet})
	defer pool.Shutdown(testCtx(t))
	eventuallyWithin(t, 10*time.Second, "the large value dead-lettered and the next handled", func() bool {
		st := pool.Stats()
		return st.DeadLettered == 1 && st.Handled == 1
	})
	// Its dead letter says where the value is; Redrive reads it from there.
	back := watch(t, topic, natsbridge.WatchOptions{QueueLength: 4})
	rs, err := natsbridge.Redrive(testCtx(t), dlq, nil)
	if err != nil || rs.Redriven != 1 {
		t.Fatalf("Redrive = %+v, %v; want the large value redriven from its stream", rs, err)
	}
	if got := take(t, back, 1); got[0].ID != 1 || len(got[0].Item) != len(big.Item) {
		t.Errorf("redriven %d of %d bytes", len(got[0].Item), len(big.Item))
	}
}

// eventuallyWithin is eventually with a shorter failsafe bound.
func eventuallyWithin(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not true after %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPoolShutdownWithHandlerIgnoringCtx: a Pool on a durable watcher shut
// down while a handler ignores its ctx hands the position over at once: a
// standby Pool in the same process handles that value again and the rest,
// each once; the late handler's value is counted handled when it returns,
// and its late Done moves nothing back: a reader after both gets nothing.
func TestPoolShutdownWithHandlerIgnoringCtx(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "misuse.ignore", natsbridge.TopicOptions{})
	wa := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	release := make(chan struct{})
	var mu sync.Mutex
	var gotA, gotB []int
	one := func(Order) int { return 0 }
	pa := handle.New(wa, one, func(ctx context.Context, o Order) error {
		if o.ID == 5 {
			<-release // ignores ctx
		}
		mu.Lock()
		gotA = append(gotA, o.ID)
		mu.Unlock()
		return nil
	}, handle.Options{Logger: quiet})
	publishAll(t, topic, 1, 20)
	eventually(t, "A holds 5 in its handler", func() bool { st := pa.Stats(); return st.Handled == 4 && st.InFlight == 1 })
	// B stands by: made once A reads, so that A is the reader.
	wb := watch(t, topic, natsbridge.WatchOptions{Durable: "d"})
	pb := handle.New(wb, one, func(ctx context.Context, o Order) error {
		mu.Lock()
		gotB = append(gotB, o.ID)
		mu.Unlock()
		return nil
	}, handle.Options{Logger: quiet})
	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := pa.Shutdown(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("A's Shutdown = %v, want DeadlineExceeded", err)
	}
	eventuallyWithin(t, 10*time.Second, "B handles 5..20", func() bool { return pb.Stats().Handled == 16 })
	close(release)
	eventually(t, "A's late handler counted", func() bool { return pa.Stats().Handled == 5 })
	checkConservedPool(t, pa.Stats())
	if err := pb.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if !slices.Equal(gotA, span(1, 5)) || !slices.Equal(gotB, span(5, 20)) {
		t.Errorf("A handled %v, B %v; want 1..5 and 5..20", gotA, gotB)
	}
	mu.Unlock()
	if r := wb.Stats().Redelivered; r < 1 {
		t.Errorf("B's Redelivered = %d, want at least 1 (value 5)", r)
	}
	c := watch(t, topic, natsbridge.WatchOptions{Durable: "d"})
	none, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	if o, err := c.Next(none); err == nil {
		t.Errorf("a third reader read %d: the position went back", o.ID)
	}
}

// checkConservedPool fails unless a Pool's fates add up to what it
// received.
func checkConservedPool[K comparable](t testing.TB, s handle.Stats[K]) {
	t.Helper()
	if f := s.Handled + s.DeadLettered + uint64(s.InFlight) + uint64(s.Waiting) + uint64(s.Backoff) + s.Abandoned; f != s.Received {
		t.Errorf("Stats %+v: fates add up to %d, received %d", s, f, s.Received)
	}
}
