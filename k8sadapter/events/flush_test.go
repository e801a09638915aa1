package events_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	testclocks "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/internal/testkit"
	"github.com/heraldgo/herald/k8sadapter/events"
)

// holds reports whether s stores an event about the named object.
func (s *sink) holds(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range s.stored {
		if ev.Regarding.Name == name {
			return true
		}
	}
	return false
}

// TestFlushWithConcurrentRecording: the events recorded before Flush are
// written, and the second occurrences patched into series, when it
// returns, while another goroutine keeps recording. Each Flush is bounded
// on its own: one bound for all of them, which write the noise too, was
// reached on a loaded machine.
//
// The cache holds every event of the test, noise included: with the
// default 4096, a recording goroutine held up between a round's first
// event and its repeat while the other recorded some 4096 noise events
// forgot the first, and the repeat was created anew, not patched.
func TestFlushWithConcurrentRecording(t *testing.T) {
	s := newSink()
	e, r := start(t, s, events.WithQueueLength(100_000), events.WithCacheSize(100_000)) // nothing dropped or forgotten
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 20_000 {
			select {
			case <-stop:
				return
			default:
			}
			r.Eventf(pod(fmt.Sprint("noise-", i)), nil, v1.EventTypeNormal, "Noise", "Making", "x")
		}
	})
	flush := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return e.Flush(ctx)
	}
	for round := range 20 {
		for i := range 20 {
			r.Eventf(pod(fmt.Sprint("r", round, "-", i)), nil, v1.EventTypeNormal, "Started", "Starting", "x")
		}
		r.Eventf(pod(fmt.Sprint("r", round, "-0")), nil, v1.EventTypeNormal, "Started", "Starting", "again")
		if err := flush(); err != nil {
			t.Fatalf("round %d: Flush = %v", round, err)
		}
		for i := range 20 {
			if name := fmt.Sprint("r", round, "-", i); !s.holds(name) {
				t.Fatalf("round %d: after Flush, no event about %s stored", round, name)
			}
		}
	}
	close(stop)
	wg.Wait()
	if err := flush(); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(); st.DroppedSinkQueue+st.Evicted != 0 || st.Patched != 20 || writerFates(st) != st.Queued {
		t.Fatalf("Stats() = %+v, want nothing dropped or forgotten, the 20 second occurrences patched, every event in one fate", st)
	}
}

// TestFlushCountsDroppedEvents: with the writer's queue overflowed, Flush
// returns once the queued events are written, and every event is then in
// exactly one fate.
func TestFlushCountsDroppedEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		s := newSink()
		s.onCreate = func(n int, _ *eventsv1.Event) error {
			if n == 1 {
				<-release
			}
			return nil
		}
		e, r := start(t, s, events.WithQueueLength(5), events.WithCacheSize(5))
		for i := range 20 { // one in the sink, five queued, fourteen dropped
			r.Eventf(pod(fmt.Sprint("p", i)), nil, v1.EventTypeNormal, "Started", "Starting", "x")
			synctest.Wait()
		}
		testkit.WhileHeld(t, e.Flush, func() { close(release) }, "its events")
		want := events.Stats{Recorded: 20, Queued: 20, Created: 6, DroppedSinkQueue: 14, Evicted: 1}
		if diff := cmp.Diff(want, e.Stats()); diff != "" {
			t.Errorf("Stats() after Flush (-want +got):\n%s", diff)
		}
	})
}

// TestFlushAfterStop: a stopped handler has handled what was recorded
// before its stop when Flush returns; Flush does not wait for what it will
// never get.
func TestFlushAfterStop(t *testing.T) {
	e, r := start(t, newSink())
	var mu sync.Mutex
	seen := map[string]bool{}
	stop, err := e.StartEventWatcher(func(o k8sruntime.Object) {
		mu.Lock()
		seen[o.(*eventsv1.Event).Regarding.Name] = true
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		r.Eventf(pod(fmt.Sprint("p", i)), nil, v1.EventTypeNormal, "Started", "Starting", "x")
	}
	stop()
	r.Eventf(pod("after"), nil, v1.EventTypeNormal, "Started", "Starting", "after the stop")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.Flush(ctx); err != nil {
		t.Fatalf("Flush = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range 100 {
		if !seen[fmt.Sprint("p", i)] {
			t.Fatalf("p%d not handled before Stop took effect", i)
		}
	}
	if seen["after"] {
		t.Error("an event recorded after the stop reached the stopped handler")
	}
}

// TestFlushRacingShutdown: Flush calls racing Shutdown all return nil;
// after Shutdown, Flush returns nil at once; a writer that is not
// recording is not waited for.
func TestFlushRacingShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := events.NewBroadcaster(newSink())
		r := e.NewRecorder(scheme.Scheme, "c")
		r.Eventf(pod("early"), nil, v1.EventTypeNormal, "Started", "Starting", "before recording")
		if err := e.Flush(context.Background()); err != nil {
			t.Fatalf("Flush before recording = %v, want nil: the writer is not waited for", err)
		}
		if err := e.StartRecordingToSinkWithContext(quiet); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 50 {
					r.Eventf(pod(fmt.Sprint("p", g, "-", i)), nil, v1.EventTypeNormal, "Started", "Starting", "x")
					if err := e.Flush(context.Background()); err != nil {
						t.Errorf("Flush racing Shutdown = %v", err)
						return
					}
				}
			})
		}
		wg.Go(func() { e.Shutdown() })
		wg.Wait() // a Flush that hung would fail the bubble
		start := time.Now()
		if err := e.Flush(context.Background()); err != nil || time.Since(start) != 0 {
			t.Errorf("Flush after Shutdown = %v after %v, want nil at once", err, time.Since(start))
		}
		if st := e.Stats(); writerFates(st) != st.Queued || st.Created != st.Queued {
			t.Errorf("Stats() = %+v, want every queued event created, the early one included", st)
		}
	})
}

// TestFlushWithHungSink: a sink call that never returns makes Flush
// return ctx.Err() when ctx ends; once it returns, Flush succeeds.
func TestFlushWithHungSink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		s := newSink()
		s.onCreate = func(int, *eventsv1.Event) error { <-release; return nil }
		e, r := start(t, s)
		r.Eventf(pod("a"), nil, v1.EventTypeNormal, "Started", "Starting", "x")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		begin := time.Now()
		if err := e.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) || time.Since(begin) != time.Minute {
			t.Errorf("Flush with a hung sink = %v after %v, want DeadlineExceeded after 1m", err, time.Since(begin))
		}
		close(release)
		if err := e.Flush(context.Background()); err != nil {
			t.Errorf("Flush once the sink returned = %v", err)
		}
	})
}

// TestFlushWaitsForRetriesOnTheFakeClock: Flush returns once a failing
// event has been retried to success; the pauses run on the WithClock
// clock, which the test steps: it never waits.
func TestFlushWaitsForRetriesOnTheFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testclocks.NewFakeClock(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
		s := newSink()
		s.onCreate = func(n int, _ *eventsv1.Event) error {
			if n <= 3 {
				return errors.New("connection refused")
			}
			return nil
		}
		e, r := start(t, s, events.WithClock(clk))
		r.Eventf(pod("a"), nil, v1.EventTypeNormal, "Started", "Starting", "x")
		done := make(chan error)
		go func() { done <- e.Flush(context.Background()) }()
		steps := 0
		for {
			synctest.Wait()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Flush = %v", err)
				}
				if st := e.Stats(); st.Created != 1 || st.Retries != 3 || steps != 3 {
					t.Errorf("after %d steps: Stats() = %+v, want created after 3 retries, one step each", steps, st)
				}
				return
			default:
			}
			clk.Step(events.DefaultSleepDuration * 5 / 4) // past any jittered pause; the series timers stay far off
			steps++
		}
	})
}

// TestFlushCoversFoldedEvents: events folded into one waiting for the
// writer are handled, by the time Flush returns, as the others are: the
// series' count is stored.
func TestFlushCoversFoldedEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		s := newSink()
		s.onCreate = func(n int, _ *eventsv1.Event) error {
			if n == 1 {
				<-release
			}
			return nil
		}
		e, r := start(t, s)
		r.Eventf(pod("a"), nil, v1.EventTypeWarning, "BackOff", "Restarting", "x")
		synctest.Wait() // the writer holds the first event in the sink
		for range 9 {
			r.Eventf(pod("a"), nil, v1.EventTypeWarning, "BackOff", "Restarting", "x") // folded: one entry
		}
		testkit.WhileHeld(t, e.Flush, func() { close(release) }, "the series' first event")
		calls, stored := s.snapshot()
		if verbs(calls) != "create patch" || len(stored) != 1 || stored[0].Series == nil || stored[0].Series.Count != 10 {
			t.Fatalf("after Flush: calls %q, stored %+v; want a create and one patch of count 10", verbs(calls), stored)
		}
		want := events.Stats{Recorded: 10, Queued: 10, Created: 1, Patched: 1, SeriesObserved: 8, Folded: 8}
		if diff := cmp.Diff(want, e.Stats()); diff != "" {
			t.Errorf("Stats() after Flush (-want +got):\n%s", diff)
		}
	})
}
