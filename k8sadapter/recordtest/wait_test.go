package recordtest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/k8sadapter/recordtest"
)

// failsafe bounds a wait that should end at once: only a bug reaches it.
const failsafe = time.Minute

// TestConcurrent records from many goroutines, in both modes, through
// both APIs, while others wait for the last events and read snapshots;
// run under -race. Every call is kept, in the plain mode as an event, in
// the correlated mode as a count.
func TestConcurrent(t *testing.T) {
	const workers, calls = 8, 200
	for _, correlate := range []bool{false, true} {
		t.Run(fmt.Sprintf("correlate=%v", correlate), func(t *testing.T) {
			r := recordtest.New(recordtest.Options{Correlate: correlate})
			ctx, cancel := context.WithTimeout(context.Background(), failsafe)
			defer cancel()
			var wg sync.WaitGroup
			for w := range workers {
				obj := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", w), Namespace: "shop"}}
				wg.Go(func() {
					for i := range calls {
						r.Event(obj, v1.EventTypeNormal, "Synced", "synced")
						r.EventsRecorder().Eventf(obj, nil, v1.EventTypeNormal, "Synced", "Sync", "call %d", i)
						if i%50 == 0 {
							_ = r.Events()
						}
					}
				})
				wg.Go(func() { // the last core/v1 event of this worker
					want := recordtest.Match{Name: obj.Name, Action: "Sync", Message: fmt.Sprintf("call %d", calls-1)}
					if _, err := r.WaitFor(ctx, want.Matches); err != nil {
						t.Errorf("WaitFor(%v) = %v", want, err)
					}
				})
			}
			wg.Wait()
			checkConcurrent(t, r, correlate, workers, calls)
		})
	}
}

// checkConcurrent checks what TestConcurrent kept.
func checkConcurrent(t *testing.T, r *recordtest.Recorder, correlate bool, workers, calls int) {
	t.Helper()
	if got := len(r.Strings()); got != 2*workers*calls {
		t.Errorf("%d lines, want one a call: %d", got, 2*workers*calls)
	}
	var count int32
	for _, e := range r.Events() {
		if e.Action == "" {
			count += e.Count
		}
	}
	// The correlated mode's spam filter lets 25 of each object's repeats
	// through at once, and counts the rest with the next that passes: none.
	want := int32(workers * calls)
	if correlate {
		want = int32(workers * 25)
	}
	if count != want {
		t.Errorf("core/v1 events count %d calls, want %d", count, want)
	}
}

// TestWait checks that Wait returns once n events are kept by another
// goroutine, and returns the context's error when it ends first.
func TestWait(t *testing.T) {
	var r recordtest.Recorder
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 3 {
			r.Eventf(pod, v1.EventTypeNormal, "Synced", "call %d", i)
		}
	}()
	events, err := r.Wait(ctx, 3)
	<-done
	if err != nil || len(events) < 3 || events[2].Message != "call 2" {
		t.Fatalf("Wait(3) = %v, %v; want the 3 events", events, err)
	}
	ended, cancelNow := context.WithCancel(context.Background())
	cancelNow()
	if events, err := r.Wait(ended, 4); err != context.Canceled || events != nil {
		t.Errorf("Wait(4) with a canceled context = %v, %v; want nil, context.Canceled", events, err)
	}
	if _, err := r.WaitFor(ended, recordtest.Match{Reason: "Gone"}.Matches); err != context.Canceled {
		t.Errorf("WaitFor(Gone) with a canceled context = %v, want context.Canceled", err)
	}
}

// TestWaitForCount waits for a count that folding reaches: a change to an
// event kept wakes the waiter as a new event does.
func TestWaitForCount(t *testing.T) {
	r := recordtest.New(recordtest.Options{Correlate: true})
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	r.Event(pod, v1.EventTypeWarning, "BackOff", "restarting")
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Event(pod, v1.EventTypeWarning, "BackOff", "restarting")
		r.Event(pod, v1.EventTypeWarning, "BackOff", "restarting")
	}()
	e := r.AwaitEvent(ctx, t, recordtest.Match{Reason: "BackOff", Count: 3})
	<-done
	if e.Count != 3 {
		t.Errorf("AwaitEvent(Count 3) = %v", e)
	}
}

// TestNoGoroutine checks that recording, in either mode, and waiting for
// what is kept leave no goroutine behind.
func TestNoGoroutine(t *testing.T) {
	for _, correlate := range []bool{false, true} {
		r := recordtest.New(recordtest.Options{Correlate: correlate})
		r.Event(pod, v1.EventTypeNormal, "R", "m")
		r.EventsRecorder().Eventf(pod, nil, v1.EventTypeNormal, "R", "A", "m")
		if _, err := r.Wait(context.Background(), 2); err != nil {
			t.Fatal(err)
		}
		goleak.VerifyNone(t)
	}
}

// TestWaitForAcrossReset blocks a waiter, resets the Recorder under it,
// and checks that the waiter finds the event kept after the Reset (its
// place in the list of changes is one of the old list).
func TestWaitForAcrossReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r recordtest.Recorder
		for range 3 {
			r.Event(pod, v1.EventTypeNormal, "A", "m")
		}
		got := make(chan recordtest.Event)
		go func() {
			e, _ := r.WaitFor(context.Background(), recordtest.Match{Reason: "B"}.Matches)
			got <- e
		}()
		synctest.Wait() // the waiter has read the 3 events and waits
		r.Reset()
		r.Event(pod, v1.EventTypeNormal, "B", "m")
		if e := <-got; e.Reason != "B" {
			t.Errorf("WaitFor(B) = %v", e)
		}
	})
}

// TestWaitWithEndedContextReturnsKeptEvents: WaitFor with an already-cancelled ctx
// still returns an event already kept that matches; with none, it
// returns ctx.Err() at once.
func TestWaitWithEndedContextReturnsKeptEvents(t *testing.T) {
	r := recordtest.New(recordtest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.WaitFor(ctx, func(recordtest.Event) bool { return true }); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitFor on nothing: %v", err)
	}
	if _, err := r.Wait(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait on nothing: %v", err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}
	r.Event(pod, v1.EventTypeNormal, "Synced", "ok")
	if e, err := r.WaitFor(ctx, func(e recordtest.Event) bool { return e.Reason == "Synced" }); err != nil || e.Reason != "Synced" {
		t.Errorf("WaitFor on a kept event with a cancelled ctx: %v %v", e, err)
	}
	if ev, err := r.Wait(ctx, 1); err != nil || len(ev) != 1 {
		t.Errorf("Wait(1) with one kept and a cancelled ctx: %v %v", ev, err)
	}
}

// TestWaitRacesWithReset: Wait and WaitFor race with Reset and
// recording (-race); each waiter returns once enough events follow the
// last Reset, with no panic.
func TestWaitRacesWithReset(t *testing.T) {
	r := recordtest.New(recordtest.Options{})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r.Event(pod, v1.EventTypeNormal, "Synced", "ok")
			if i%7 == 0 {
				r.Reset()
			}
		}
	}()
	for range 4 {
		wg.Go(func() {
			for range 200 {
				ev, err := r.Wait(ctx, 3)
				if err != nil {
					t.Error(err)
					return
				}
				if len(ev) < 3 {
					t.Errorf("Wait(3) returned %d", len(ev))
				}
				if _, err := r.WaitFor(ctx, func(e recordtest.Event) bool { return e.Reason == "Synced" }); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var writer sync.WaitGroup
	writer.Go(func() { <-stop })
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		t.Error("waiters did not finish")
	}
	close(stop)
	<-done
}

// TestWaitForSeesEveryCount: with Correlate, 32 goroutines record the
// same event while 32 others wait, each for one count from 1 to 32: every
// waiter returns its count, however the changes interleave with the
// waiters' looks (a waiter is shown each change as the event was then).
func TestWaitForSeesEveryCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 32
		r := recordtest.New(recordtest.Options{
			Correlate: true,
			// A clock standing still, and a spam bucket that lets all n through.
			CorrelatorOptions: record.CorrelatorOptions{Clock: clocktesting.NewFakeClock(t0), BurstSize: n},
		})
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		defer cancel()
		got := make([]int32, n+1)
		var waiters sync.WaitGroup
		for count := int32(1); count <= n; count++ {
			waiters.Go(func() {
				e, err := r.WaitFor(ctx, func(e recordtest.Event) bool { return e.Count == count })
				if err != nil {
					t.Errorf("WaitFor(Count == %d): %v", count, err)
					return
				}
				got[count] = e.Count
			})
		}
		synctest.Wait() // every waiter has looked, and waits
		var recorders sync.WaitGroup
		for range n {
			recorders.Go(func() { r.Event(pod, v1.EventTypeWarning, "BackOff", "restarting") })
		}
		recorders.Wait()
		waiters.Wait()
		for count := int32(1); count <= n; count++ {
			if got[count] != count {
				t.Errorf("waiter for count %d got %d", count, got[count])
			}
		}
	})
}

// TestWaitForSeesCountsPassedBetweenLooks: an event counted 1 when
// WaitFor(Count == 3) looks, and 5 when it looks again, was counted 3 in
// between: WaitFor returns it with that count.
func TestWaitForSeesCountsPassedBetweenLooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := recordtest.New(recordtest.Options{
			Correlate:         true,
			CorrelatorOptions: record.CorrelatorOptions{Clock: clocktesting.NewFakeClock(t0)},
		})
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		defer cancel()
		r.Event(pod, v1.EventTypeWarning, "BackOff", "restarting")
		done := make(chan recordtest.Event)
		go func() {
			e, err := r.WaitFor(ctx, func(e recordtest.Event) bool { return e.Count == 3 })
			if err != nil {
				t.Errorf("WaitFor(Count == 3): %v", err)
			}
			done <- e
		}()
		synctest.Wait() // it saw count 1, and waits
		for range 4 {
			r.Event(pod, v1.EventTypeWarning, "BackOff", "restarting")
		}
		if e := <-done; e.Count != 3 {
			t.Errorf("WaitFor(Count == 3) = %v, want the event at count 3", e)
		}
	})
}
