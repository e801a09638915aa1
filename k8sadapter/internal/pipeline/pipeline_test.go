package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/internal/testkit"
)

// testPipeline is a pipeline of core/v1 events whose sinks fold by reason
// (at most 100 in an entry) and count in an int.
type testPipeline = Pipeline[*v1.Event, string, []string, int]

func newPipeline(t *testing.T, queue int, log *testkit.Lines) *testPipeline {
	t.Helper()
	p := New(Options{Name: "test", QueueLength: queue, Clock: clock.RealClock{}, Logger: log.Logger()}, byReason(100))
	t.Cleanup(func() {
		if err := p.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return p
}

func event(i int) *v1.Event {
	return &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("e", i), Namespace: "ns"}, Count: 1}
}

// TestPublishRefusalsAreLoggedPerBurst: a queue that stays full, and a
// pipeline shut down, refuse every event, count each, and log one line per
// burst with the count, not one per event.
func TestPublishRefusalsAreLoggedPerBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.Lines
		p := newPipeline(t, 1, &log)
		// A Block watcher nobody reads holds the distributor, so that the
		// incoming queue (1) fills.
		stuck, err := p.b.WatchWith(broadcast.WatchOptions{QueueLength: 1, Full: broadcast.Block})
		if err != nil {
			t.Fatal(err)
		}
		p.watched.Add(1)   // as a handler's watcher: Publish hands events to the broadcaster
		for i := range 3 { // one in stuck's queue, one held by the distributor, one queued
			p.Publish(log.Logger(), event(i))
			synctest.Wait()
		}
		for i := range 1000 {
			p.Publish(log.Logger(), event(i))
		}
		full := log.With("too many queued events")
		if len(full) != 1 || !strings.Contains(full[0], `"droppedSinceLastReport"=1`) {
			t.Errorf("lines for 1000 refusals: %q; want one, reporting the first", full)
		}
		time.Sleep(BurstInterval)
		p.Publish(log.Logger(), event(0))
		full = log.With("too many queued events")
		if len(full) != 2 || !strings.Contains(full[1], `"droppedSinceLastReport"=1000`) {
			t.Errorf("lines after %v: %q; want a second one, reporting the 1000 since the first", BurstInterval, full)
		}
		stuck.Stop()
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		for i := range 1000 {
			p.Publish(log.Logger(), event(i))
		}
		if closed := log.With("Unable to record event (will not retry!)"); len(closed) != 1 {
			t.Errorf("lines for 1000 events after shutdown: %d, want 1", len(closed))
		}
		r := p.RecorderCounts()
		if r.Queued != 1004 || p.refused.Load() != 1001 || r.DroppedClosed != 1000 {
			t.Errorf("RecorderCounts() = %+v, %d refused by the handlers' full queue; want 1004 queued (1001 of them refused), 1000 refused closed", r, p.refused.Load())
		}
	})
}

// gated returns a consumer body that waits for a token on gate before
// handling each event, and counts them.
func gated(gate chan struct{}) func(*Consumer[*v1.Event, int]) {
	return func(c *Consumer[*v1.Event, int]) {
		n := 0
		for range c.All() {
			<-gate
			n++
			c.Done(&n)
		}
	}
}

func TestFlush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.Lines
		p := newPipeline(t, 100, &log)
		set := newSet[*v1.Event](func(c *int, o int) { *c += o })
		gate := make(chan struct{})
		c, err := start(&p.hub, set, "test", log.Logger(), gated(gate))
		if err != nil {
			t.Fatal(err)
		}
		idle, err := watch[*v1.Event, int](&p.hub, "idle") // no goroutine: not waited for
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			p.Publish(log.Logger(), event(i))
		}
		done := make(chan error)
		go func() { done <- p.Flush(context.Background()) }()
		for i := range 3 {
			synctest.Wait()
			select {
			case err := <-done:
				t.Fatalf("Flush returned %v with %d of 3 events handled", err, i)
			default:
			}
			gate <- struct{}{}
		}
		if err := <-done; err != nil {
			t.Fatalf("Flush = %v", err)
		}
		if tl := c.Tally(); tl.Handled != 3 || tl.Counts != 3 || tl.Queued != 3 {
			t.Errorf("after Flush: %+v, want 3 queued and handled", tl)
		}
		if tl := idle.Tally(); tl.Queued != 3 || tl.Handled != 0 {
			t.Errorf("idle consumer: %+v, want 3 queued and waiting", tl)
		}

		// A consumer that hangs holds Flush until its ctx ends.
		p.Publish(log.Logger(), event(3))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Flush with a hung consumer = %v, want DeadlineExceeded", err)
		}
		gate <- struct{}{}
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := p.Flush(context.Background()); err != nil {
			t.Errorf("Flush after Shutdown = %v, want nil", err)
		}
		drained := 0
		idle.Drain(func() {
			for range idle.All() {
				drained++
			}
		})
		if drained != 4 {
			t.Errorf("Drain of a consumer that never ran handed on %d events, want the 4 queued", drained)
		}
		if s := set.sum(); s.Handled != 4 || s.Queued != 4 {
			t.Errorf("set total after the consumer ended: %+v, want 4 queued and handled", s)
		}
	})
}

// TestStopTakesEffectAtItsQueuePosition: events published before Stop
// are handled, however quickly Stop follows them. (Without the Flush in
// Stop, a round loses events within a few hundred.)
func TestStopTakesEffectAtItsQueuePosition(t *testing.T) {
	rounds := 1000
	if testing.Short() {
		rounds = 300
	}
	var log testkit.Lines
	p := newPipeline(t, 1000, &log)
	set := newSet[*v1.Event](func(c *int, o int) { *c += o })
	for round := range rounds {
		c, err := start(&p.hub, set, "test", log.Logger(), func(c *Consumer[*v1.Event, int]) {
			n := 0
			for range c.All() {
				n++
				c.Done(&n)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			p.Publish(log.Logger(), event(i))
		}
		c.Stop()
		if err := p.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if tl := c.Tally(); tl.Handled != 200 || tl.Queued != 200 {
			t.Fatalf("round %d: %+v, want the 200 events published before Stop handled", round, tl)
		}
	}
	// The 50 stopped consumers are gone; their counts are not.
	if err := p.Shutdown(context.Background()); err != nil { // waits for their goroutines
		t.Fatal(err)
	}
	set.mu.Lock()
	live := len(set.live)
	set.mu.Unlock()
	if s := set.sum(); live != 0 || s.Handled != uint64(rounds*200) {
		t.Errorf("%d consumers kept, total %+v; want none kept, %d handled", live, s, rounds*200)
	}
	if n := p.refused.Load(); n != 0 {
		t.Errorf("the test lost %d events at a full queue", n)
	}
}

// TestDropsAtAConsumerAreLoggedPerBurst: a consumer that falls behind by
// more than its queue loses events; one line reports them when it catches
// up, and the rest at the end.
func TestDropsAtAConsumerAreLoggedPerBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.Lines
		p := newPipeline(t, 2, &log)
		set := newSet[*v1.Event](func(c *int, o int) { *c += o })
		gate := make(chan struct{})
		c, err := start(&p.hub, set, "slow", log.Logger(), gated(gate))
		if err != nil {
			t.Fatal(err)
		}
		burst := func() {
			for i := range 10 { // one handled, two queued, seven dropped
				p.Publish(log.Logger(), event(i))
				synctest.Wait()
			}
			for range 3 {
				gate <- struct{}{}
			}
			synctest.Wait()
		}
		burst()
		if got := log.With("the watcher's queue is full"); len(got) != 1 || !strings.Contains(got[0], `"dropped"=7`) {
			t.Errorf("after one burst: %q, want one line reporting 7", got)
		}
		burst() // within BurstInterval: counted, not logged yet
		if got := log.With("the watcher's queue is full"); len(got) != 1 {
			t.Errorf("after a second burst within %v: %d lines, want still 1", BurstInterval, len(got))
		}
		c.Stop()
		synctest.Wait()
		got := log.With("the watcher's queue is full")
		if len(got) != 2 || !strings.Contains(got[1], `"dropped"=7`) || !strings.Contains(got[1], `"watcher"="slow"`) {
			t.Errorf("after the consumer ended: %q, want a second line reporting 7", got)
		}
		if tl := c.Tally(); tl.Dropped != 14 || tl.Handled != 6 || tl.Queued != 20 {
			t.Errorf("tally %+v, want 20 queued: 6 handled, 14 dropped", tl)
		}
	})
}

// TestDropsAtAConsumerEndingAfterAQuietIntervalAreLogged: drops counted
// within an interval and not logged yet get their line when the consumer
// ends, also when it ends an interval or more after the last line.
func TestDropsAtAConsumerEndingAfterAQuietIntervalAreLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.Lines
		p := newPipeline(t, 2, &log)
		set := newSet[*v1.Event](func(c *int, o int) { *c += o })
		gate := make(chan struct{})
		c, err := start(&p.hub, set, "slow", log.Logger(), gated(gate))
		if err != nil {
			t.Fatal(err)
		}
		burst := func() {
			for i := range 10 { // one handled, two queued, seven dropped
				p.Publish(log.Logger(), event(i))
				synctest.Wait()
			}
			for range 3 {
				gate <- struct{}{}
			}
			synctest.Wait()
		}
		burst() // logged at once
		burst() // within BurstInterval: counted, not logged yet
		time.Sleep(BurstInterval)
		c.Stop()
		synctest.Wait()
		got := log.With("the watcher's queue is full")
		if len(got) != 2 || !strings.Contains(got[1], `"dropped"=7`) {
			t.Errorf("after the consumer ended %v after the first line: %q, want a second line reporting 7", BurstInterval, got)
		}
	})
}

// TestHandlersCountRefusedEventsAsDropped: an event the broadcaster's
// full incoming queue refuses reaches no handler; each handler registered
// then counts it as owed and dropped, so that its tally still adds up; a
// handler stopped before, or started after, does not.
func TestHandlersCountRefusedEventsAsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.Lines
		p := newPipeline(t, 1, &log)
		set := newSet[*v1.Event](func(c *int, o int) { *c += o })
		count := func(c *Consumer[*v1.Event, int]) {
			n := 0
			for range c.All() {
				n++
				c.Done(&n)
			}
		}
		early, err := start(&p.hub, set, "early", log.Logger(), count)
		if err != nil {
			t.Fatal(err)
		}
		stopped, err := start(&p.hub, set, "stopped", log.Logger(), count)
		if err != nil {
			t.Fatal(err)
		}
		stopped.Stop()
		// A Block watcher nobody reads holds the distributor: the incoming
		// queue (1) fills.
		stuck, err := p.b.WatchWith(broadcast.WatchOptions{QueueLength: 1, Full: broadcast.Block})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 { // one in each queue, one held by the distributor, one queued
			p.Publish(log.Logger(), event(i))
			synctest.Wait()
		}
		for i := range 10 {
			p.Publish(log.Logger(), event(i))
		}
		late, err := start(&p.hub, set, "late", log.Logger(), count)
		if err != nil {
			t.Fatal(err)
		}
		stuck.Stop()
		if err := p.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			c    *Consumer[*v1.Event, int]
			want Tally[int]
		}{
			{early, Tally[int]{Counts: 3, Queued: 13, Handled: 3, Dropped: 10}},
			{stopped, Tally[int]{}},
			{late, Tally[int]{}},
		}
		for _, tc := range tests {
			if diff := cmp.Diff(tc.want, tc.c.Tally()); diff != "" {
				t.Errorf("%s: Tally() (-want +got):\n%s", tc.c.what, diff)
			}
		}
	})
}

// TestRefusalAsShutdownBeginsIsLogged: an event the full incoming queue
// refuses is logged by the time Shutdown returns, also when a Shutdown
// runs while the refusal is being counted and within an interval of the
// last line: a Shutdown cannot get in before the count does.
func TestRefusalAsShutdownBeginsIsLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log testkit.Lines
		clk := &hookClock{}
		p := New(Options{Name: "test", QueueLength: 1, Clock: clk, Logger: log.Logger()}, byReason(100))
		stuck, err := p.b.WatchWith(broadcast.WatchOptions{QueueLength: 1, Full: broadcast.Block})
		if err != nil {
			t.Fatal(err)
		}
		p.watched.Add(1)   // as a handler's watcher
		for i := range 4 { // the fourth is refused, and logged at once
			p.Publish(log.Logger(), event(i))
			synctest.Wait()
		}
		shutDuring := false
		clk.hook = func() { // the time of the second refusal is read
			stuck.Stop()
			if p.gate.TryLock() { // Shutdown could run now: let it
				p.gate.Unlock()
				shutDuring = true
				if err := p.Shutdown(context.Background()); err != nil {
					t.Error(err)
				}
			}
		}
		p.Publish(log.Logger(), event(4))
		if !shutDuring { // one Shutdown: a second would log what the first left
			if err := p.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		total := 0
		lines := log.With("too many queued events")
		for _, l := range lines {
			if m := reportedRe.FindStringSubmatch(l); m != nil {
				n, _ := strconv.Atoi(m[1])
				total += n
			}
		}
		if total != 2 {
			t.Errorf("lines %q report %d refusals (a Shutdown ran while one was counted: %v), want 2", lines, total, shutDuring)
		}
	})
}
