package k8sadapter_test

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
	testclocks "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/internal/testkit"
	"github.com/heraldgo/herald/k8sadapter"
)

// names keeps the names of the objects of the events a sink or handler
// got.
type names struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (n *names) add(ev *v1.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seen == nil {
		n.seen = map[string]bool{}
	}
	n.seen[ev.InvolvedObject.Name] = true
}

func (n *names) has(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.seen[name]
}

// TestFlushWithConcurrentRecording: events recorded before Flush are
// written and handled when it returns, while another goroutine keeps
// recording. Each Flush is bounded by the failsafe on its own: one bound
// for all twenty, which write the noise too, grew with the load of the
// machine (a third of it used, where the same test of the events package
// reached its own).
func TestFlushWithConcurrentRecording(t *testing.T) {
	// Queues large enough that nothing is dropped: every event recorded
	// before Flush must be there when it returns.
	e := newBroadcaster(t, k8sadapter.WithQueueLength(100_000))
	var written, handled names
	e.StartRecordingToSink(&scriptSink{onCreate: func(_ int, ev *v1.Event) (*v1.Event, error) {
		written.add(ev)
		return ev, nil
	}})
	e.StartEventWatcher(handled.add)
	r := recorder(e)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 20_000 {
			select {
			case <-stop:
				return
			default:
			}
			r.Eventf(pod(fmt.Sprint("noise-", i)), v1.EventTypeNormal, "Noise", "event %d", i)
		}
	})
	flush := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		defer cancel()
		return e.Flush(ctx)
	}
	for round := range 20 {
		for i := range 50 {
			r.Eventf(pod(fmt.Sprint("r", round, "-", i)), v1.EventTypeNormal, "Started", "event %d", i)
		}
		if err := flush(); err != nil {
			t.Fatalf("round %d: Flush = %v", round, err)
		}
		for i := range 50 {
			if name := fmt.Sprint("r", round, "-", i); !written.has(name) || !handled.has(name) {
				t.Fatalf("round %d: after Flush, %s written %v, handled %v; want both", round, name, written.has(name), handled.has(name))
			}
		}
	}
	close(stop)
	wg.Wait()
	if s := e.Stats(); s.DroppedSinkQueue+s.DroppedWatcherQueue != 0 {
		t.Fatalf("the test dropped events, so it proves less than it says: %+v", s)
	}
}

// TestFlushCountsDroppedEvents: when a sink's queue overflowed, Flush
// returns once the queued events are written, and every event is then in
// exactly one fate: written or dropped.
func TestFlushCountsDroppedEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		sink := &scriptSink{onCreate: func(_ int, e *v1.Event) (*v1.Event, error) { g.wait(); return e, nil }}
		e := newBroadcaster(t, k8sadapter.WithQueueLength(5))
		h := e.StartRecordingToSink(sink).(*k8sadapter.Handle)
		r := recorder(e)
		for i := range 20 { // one in the sink, five queued, fourteen dropped
			r.Eventf(pod(fmt.Sprint("p", i)), v1.EventTypeNormal, "Started", "event %d", i)
			synctest.Wait()
		}
		testkit.WhileHeld(t, e.Flush, g.release, "its events")
		// Exact at once: no waiting after Flush.
		want := k8sadapter.Stats{Queued: 20, Created: 6, DroppedSinkQueue: 14}
		if diff := cmp.Diff(want, h.Stats()); diff != "" {
			t.Errorf("sink Stats() after Flush (-want +got):\n%s", diff)
		}
		if s := e.Stats(); s.Recorded != 20 || recorderFates(s) != s.Recorded || sinkFates(s) != s.Queued {
			t.Errorf("Stats() after Flush = %+v, want every event in one fate", s)
		}
	})
}

// TestFlushAfterStop: a stopped sink or handler still handles what was
// recorded before its Stop, and Flush neither misses it nor waits for the
// stopped watcher beyond that.
func TestFlushAfterStop(t *testing.T) {
	e := newBroadcaster(t)
	var written, handled names
	sink := e.StartRecordingToSink(&scriptSink{onCreate: func(_ int, ev *v1.Event) (*v1.Event, error) {
		written.add(ev)
		return ev, nil
	}})
	handler := e.StartEventWatcher(handled.add)
	r := recorder(e)
	for i := range 100 {
		r.Eventf(pod(fmt.Sprint("p", i)), v1.EventTypeNormal, "Started", "event %d", i)
	}
	sink.Stop()
	handler.Stop()
	r.Event(pod("after"), v1.EventTypeNormal, "Started", "after the stop")
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	if err := e.Flush(ctx); err != nil {
		t.Fatalf("Flush = %v", err)
	}
	for i := range 100 {
		if name := fmt.Sprint("p", i); !written.has(name) || !handled.has(name) {
			t.Fatalf("%s written %v, handled %v; want both", name, written.has(name), handled.has(name))
		}
	}
	if written.has("after") || handled.has("after") {
		t.Error("an event recorded after Stop reached the stopped watchers")
	}
}

// TestFlushRacingShutdown: Flush calls racing Shutdown all return, with
// nil; after Shutdown, Flush returns nil at once.
func TestFlushRacingShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := k8sadapter.NewBroadcaster(quiet)
		e.StartRecordingToSink(&scriptSink{})
		e.StartEventWatcher(func(*v1.Event) {})
		r := recorder(e)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 50 {
					r.Eventf(pod(fmt.Sprint("p", g, "-", i)), v1.EventTypeNormal, "Started", "event %d", i)
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
		if s := e.Stats(); sinkFates(s) != s.Queued || s.Handled != s.Queued || recorderFates(s) != s.Recorded {
			t.Errorf("Stats() = %+v, want every event accounted for", s)
		}
	})
}

// TestFlushWithHungSink: a sink call that never returns makes Flush
// return ctx.Err() when ctx ends, not hang; once it returns, Flush
// succeeds.
func TestFlushWithHungSink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		hung := &scriptSink{onCreate: func(_ int, e *v1.Event) (*v1.Event, error) { g.wait(); return e, nil }}
		e := newBroadcaster(t)
		e.StartRecordingToSink(hung)
		e.StartRecordingToSink(&scriptSink{}) // a healthy one is done at once
		recorder(e).Event(pod("a"), v1.EventTypeNormal, "Started", "x")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		if err := e.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Minute {
			t.Errorf("Flush with a hung sink = %v after %v, want DeadlineExceeded after 1m", err, time.Since(start))
		}
		g.release()
		if err := e.Flush(context.Background()); err != nil {
			t.Errorf("Flush once the sink returned = %v", err)
		}
	})
}

// TestFlushWaitsForRetriesOnTheFakeClock: Flush returns once a failing
// event has been retried to success; the pauses run on the WithClock
// clock, so the test steps it and never waits.
func TestFlushWaitsForRetriesOnTheFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testclocks.NewFakeClock(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
		sink := &scriptSink{onCreate: func(n int, e *v1.Event) (*v1.Event, error) {
			if n <= 3 {
				return nil, errors.New("connection refused")
			}
			return e, nil
		}}
		e := newBroadcaster(t, k8sadapter.WithClock(clk), k8sadapter.WithSleepDuration(10*time.Second))
		e.StartRecordingToSink(sink)
		recorder(e).Event(pod("a"), v1.EventTypeNormal, "Started", "x")
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
				if s := e.Stats(); s.Created != 1 || s.Retries != 3 || steps != 3 {
					t.Errorf("after %d steps: Stats() = %+v, want created after 3 retries, one step each", steps, s)
				}
				return
			default:
			}
			if !clk.HasWaiters() {
				t.Fatal("Flush waits, but not for the clock")
			}
			clk.Step(10 * time.Second) // past any pause: the first is a fraction of 10 s
			steps++
		}
	})
}

// TestFlushCoversFoldedEvents: thirty identical events, all but the first
// waiting while the sink holds the first: the repeats fold into one
// entry, each still spends a spam token (the burst is 25), and the sink
// writes one patch for the run, with the count of the last one allowed.
// Flush returns once that patch is written.
func TestFlushCoversFoldedEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		sink := &scriptSink{onCreate: func(_ int, e *v1.Event) (*v1.Event, error) {
			g.wait()
			out := e.DeepCopy()
			out.ResourceVersion = "1"
			return out, nil
		}}
		e := newBroadcaster(t)
		e.StartRecordingToSink(sink)
		r := recorder(e)
		r.Event(pod("crash"), v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
		synctest.Wait() // the sink holds the first event
		for range 29 {
			r.Event(pod("crash"), v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
		}
		testkit.WhileHeld(t, e.Flush, g.release, "the first event")
		calls := sink.snapshot()
		if got := verbs(calls); len(got) != 2 || got[1] != "patch" || calls[1].event.Count != 25 {
			t.Fatalf("sink calls %v; want a create and one patch of count 25", got)
		}
		want := k8sadapter.Stats{Recorded: 30, Queued: 30, Created: 1, Patched: 24, Deduplicated: 24, SpamSkipped: 5, Folded: 28}
		if diff := cmp.Diff(want, e.Stats()); diff != "" {
			t.Errorf("Stats() after Flush (-want +got):\n%s", diff)
		}
	})
}
