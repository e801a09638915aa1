package broadcast_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/broadcast"
)

// failsafe bounds a wait that should end at once; it is never the means of
// synchronisation, only the limit after which the test reports a hang.
const failsafe = 10 * time.Second

// newB returns a broadcaster shut down when the test ends.
func newB[T any](t *testing.T, opts broadcast.Options) *broadcast.Broadcaster[T] {
	t.Helper()
	b := broadcast.New[T](opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown in cleanup: %v", err)
		}
	})
	return b
}

func watchT[T any](t *testing.T, b *broadcast.Broadcaster[T]) *broadcast.Watcher[T] {
	t.Helper()
	w, err := b.Watch()
	if err != nil {
		t.Fatalf("Watch() error = %v", err)
	}
	t.Cleanup(w.Stop)
	return w
}

// watchWithT is watchT for WatchWith.
func watchWithT[T any](t *testing.T, b *broadcast.Broadcaster[T], opts broadcast.WatchOptions, prefix ...T) *broadcast.Watcher[T] {
	t.Helper()
	w, err := b.WatchWith(opts, prefix...)
	if err != nil {
		t.Fatalf("WatchWith(%+v) error = %v", opts, err)
	}
	t.Cleanup(w.Stop)
	return w
}

// watchChanT registers a channel watcher, stopped when the test ends.
func watchChanT[T any](t *testing.T, b *broadcast.Broadcaster[T]) *broadcast.Watcher[T] {
	t.Helper()
	return watchWithT(t, b, broadcast.WatchOptions{Read: broadcast.ReadChannel})
}

func publish[T any](t *testing.T, b *broadcast.Broadcaster[T], vs ...T) {
	t.Helper()
	for _, v := range vs {
		if err := b.Publish(context.Background(), v); err != nil {
			t.Fatalf("Publish(%v) error = %v", v, err)
		}
	}
}

func shutdown[T any](t *testing.T, b *broadcast.Broadcaster[T]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown() error = %v", err)
	}
}

// drain reads w until it is closed, failing the test if that takes longer
// than the failsafe: a channel watcher through Events, then a queue watcher
// (whose Events is closed) through Next.
func drain[T any](t *testing.T, w *broadcast.Watcher[T]) []T {
	t.Helper()
	var got []T
	timeout := time.After(failsafe)
	for {
		select {
		case v, ok := <-w.Events():
			if !ok {
				return append(got, readNext(t, w)...)
			}
			got = append(got, v)
		case <-timeout:
			t.Fatalf("watcher not closed after %v; got %v", failsafe, got)
		}
	}
}

// readNext reads w with Next until it is closed, failing the test if that
// takes longer than the failsafe.
func readNext[T any](t *testing.T, w *broadcast.Watcher[T]) []T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	var got []T
	for {
		v, err := w.Next(ctx)
		if errors.Is(err, broadcast.ErrClosed) {
			return got
		}
		if err != nil {
			t.Fatalf("Next() error = %v after %v", err, got)
		}
		got = append(got, v)
	}
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

// readModes are the three ways to read a watcher, each with the read
// mode of the watchers it reads; tests that depend on delivery run with
// each.
var readModes = []struct {
	name string
	mode broadcast.ReadMode
	read func(t *testing.T, w *broadcast.Watcher[int]) []int
}{
	{"Events", broadcast.ReadChannel, drain[int]},
	{"All", broadcast.ReadQueue, func(t *testing.T, w *broadcast.Watcher[int]) []int {
		var got []int
		for v := range w.All() {
			got = append(got, v)
		}
		return got
	}},
	{"Next", broadcast.ReadQueue, readNext[int]},
}

// readMode is ReadChannel if channel is true, else ReadQueue.
func readMode(channel bool) broadcast.ReadMode {
	if channel {
		return broadcast.ReadChannel
	}
	return broadcast.ReadQueue
}

// watchMode registers a watcher in read mode m, stopped when the test
// ends.
func watchMode(t *testing.T, b *broadcast.Broadcaster[int], m broadcast.ReadMode) *broadcast.Watcher[int] {
	t.Helper()
	return watchWithT(t, b, broadcast.WatchOptions{Read: m})
}

func TestWatchSeesOnlyValuesQueuedAfterIt(t *testing.T) {
	for _, mode := range readModes {
		t.Run(mode.name, func(t *testing.T) {
			// A queue of 2 that drops: had the watcher been registered before
			// the first values, they would have filled it.
			b := newB[int](t, broadcast.Options{QueueLength: 2, Full: broadcast.DropNewest})
			publish(t, b, -3, -2, -1)
			w := watchMode(t, b, mode.mode)
			publish(t, b, 0, 1)
			shutdown(t, b)
			if got, want := mode.read(t, w), []int{0, 1}; !slices.Equal(got, want) {
				t.Errorf("watcher got %v, want %v", got, want)
			}
		})
	}
}

func TestEveryWatcherGetsEveryValueInOrder(t *testing.T) {
	for _, mode := range readModes {
		t.Run(mode.name, func(t *testing.T) {
			b := newB[int](t, broadcast.Options{QueueLength: 3})
			const n = 1000
			ws := make([]*broadcast.Watcher[int], 5)
			got := make([][]int, len(ws))
			var wg sync.WaitGroup
			for i := range ws {
				ws[i] = watchMode(t, b, mode.mode)
				wg.Go(func() { got[i] = mode.read(t, ws[i]) })
			}
			publish(t, b, seq(0, n)...)
			shutdown(t, b)
			wg.Wait()
			for i := range ws {
				if !slices.Equal(got[i], seq(0, n)) {
					t.Errorf("watcher %d got %d values %v..., want 0..%d in order", i, len(got[i]), head(got[i]), n-1)
				}
				if d := ws[i].Dropped(); d != 0 {
					t.Errorf("watcher %d Dropped() = %d, want 0", i, d)
				}
			}
			if s := b.Stats(); s.Published != n || s.Delivered != n*uint64(len(ws)) {
				t.Errorf("Stats() = %+v, want Published %d, Delivered %d", s, n, n*len(ws))
			}
		})
	}
}

func head(s []int) []int { return s[:min(len(s), 10)] }

// TestFIFORegistrationConcurrent races publishers against watchers joining:
// each watcher must see, from every publisher, exactly the values queued
// after its Watch call, in order and without gaps.
func TestFIFORegistrationConcurrent(t *testing.T) {
	const publishers, perPublisher, watchers = 4, 2000, 8
	type msg struct{ pub, seq int }
	b := newB[msg](t, broadcast.Options{QueueLength: 16, IncomingQueueLength: 4})
	var started, completed [publishers]atomic.Int64
	type reg struct {
		w      *broadcast.Watcher[msg]
		lo, hi [publishers]int
	}
	regs := make([]reg, watchers)
	var wg sync.WaitGroup
	got := make([][]msg, watchers)
	for p := range publishers {
		wg.Go(func() {
			for i := range perPublisher {
				started[p].Store(int64(i + 1))
				if err := b.Publish(context.Background(), msg{p, i}); err != nil {
					t.Errorf("Publish error = %v", err)
					return
				}
				completed[p].Store(int64(i + 1))
			}
		})
	}
	var wwg sync.WaitGroup
	for i := range watchers {
		r := &regs[i]
		for p := range publishers {
			r.lo[p] = int(completed[p].Load())
		}
		r.w = watchT(t, b)
		for p := range publishers {
			r.hi[p] = int(started[p].Load())
		}
		wwg.Go(func() {
			for v := range r.w.All() {
				got[i] = append(got[i], v)
			}
		})
	}
	wg.Wait()
	shutdown(t, b)
	wwg.Wait()
	for i, r := range regs {
		next := [publishers]int{}
		for p := range next {
			next[p] = -1
		}
		for _, m := range got[i] {
			if next[m.pub] == -1 {
				if m.seq < r.lo[m.pub] || m.seq > r.hi[m.pub] {
					t.Errorf("watcher %d: first value of publisher %d is %d, want within [%d, %d] (queued around Watch)", i, m.pub, m.seq, r.lo[m.pub], r.hi[m.pub])
				}
			} else if m.seq != next[m.pub] {
				t.Errorf("watcher %d: publisher %d value %d follows %d", i, m.pub, m.seq, next[m.pub]-1)
			}
			next[m.pub] = m.seq + 1
		}
		for p, n := range next {
			if n != perPublisher && r.hi[p] < perPublisher {
				t.Errorf("watcher %d: publisher %d values end at %d, want %d", i, p, n, perPublisher)
			}
		}
	}
}

func TestFullPolicies(t *testing.T) {
	tests := []struct {
		policy      broadcast.FullPolicy
		events      bool // a channel watcher, read by Events
		want        []int
		wantNewest  uint64
		wantOldest  uint64
		wantDropped uint64
	}{
		{broadcast.DropNewest, false, []int{0, 1}, 3, 0, 3},
		{broadcast.DropNewest, true, []int{0, 1}, 3, 0, 3},
		{broadcast.DropOldest, false, []int{3, 4}, 0, 3, 3},
		{broadcast.DropOldest, true, []int{3, 4}, 0, 3, 3},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%v/events=%v", tc.policy, tc.events), func(t *testing.T) {
			b := newB[int](t, broadcast.Options{QueueLength: 2, Full: tc.policy})
			read := broadcast.ReadQueue
			if tc.events {
				read = broadcast.ReadChannel
			}
			slow := watchWithT(t, b, broadcast.WatchOptions{Read: read})
			fast, err := b.WatchWith(broadcast.WatchOptions{QueueLength: 10})
			if err != nil {
				t.Fatal(err)
			}
			publish(t, b, 0, 1, 2, 3, 4)
			shutdown(t, b)
			if got := drain(t, slow); !slices.Equal(got, tc.want) {
				t.Errorf("full %v watcher got %v, want %v", tc.policy, got, tc.want)
			}
			if got := drain(t, fast); !slices.Equal(got, seq(0, 5)) {
				t.Errorf("other watcher got %v, want every value", got)
			}
			if got := slow.Dropped(); got != tc.wantDropped {
				t.Errorf("Dropped() = %d, want %d", got, tc.wantDropped)
			}
			if got := fast.Dropped(); got != 0 {
				t.Errorf("other watcher Dropped() = %d, want 0", got)
			}
			s := b.Stats()
			if s.DroppedNewest != tc.wantNewest || s.DroppedOldest != tc.wantOldest {
				t.Errorf("Stats() = %+v, want DroppedNewest %d, DroppedOldest %d", s, tc.wantNewest, tc.wantOldest)
			}
		})
	}
}

// TestDropOldestKeepsNewestAcrossBatches fills a DropOldest watcher across
// many distributor rounds: whatever the batching, it ends with the newest.
func TestDropOldestKeepsNewestAcrossBatches(t *testing.T) {
	b := newB[int](t, broadcast.Options{QueueLength: 3, IncomingQueueLength: 1, Full: broadcast.DropOldest})
	w := watchT(t, b)
	publish(t, b, seq(0, 100)...)
	shutdown(t, b)
	if got, want := drain(t, w), []int{97, 98, 99}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := w.Dropped(); got != 97 {
		t.Errorf("Dropped() = %d, want 97", got)
	}
}

func TestPrefixComesFirst(t *testing.T) {
	for _, mode := range readModes {
		t.Run(mode.name, func(t *testing.T) {
			b := newB[int](t, broadcast.Options{QueueLength: 1})
			publish(t, b, -1)
			prefix := []int{100, 101, 102, 103, 104}
			w, err := b.WatchWith(broadcast.WatchOptions{Read: mode.mode}, prefix...) // longer than the queue: must not block
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Stop)
			var got []int
			done := make(chan struct{})
			go func() { defer close(done); got = mode.read(t, w) }()
			publish(t, b, 0, 1, 2)
			shutdown(t, b)
			<-done
			if want := []int{100, 101, 102, 103, 104, 0, 1, 2}; !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestPrefixNeverBlocksOnAStalledBroadcaster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := broadcast.New[int](broadcast.Options{QueueLength: 1, IncomingQueueLength: 1})
		stuck := watchT(t, b)
		publish(t, b, 0, 1, 2) // 0 fills stuck, the distributor waits with 1, 2 is queued
		synctest.Wait()
		w, err := b.WatchWith(broadcast.WatchOptions{}, 7, 8, 9)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []int{7, 8, 9} {
			if v, err := w.Next(context.Background()); v != want || err != nil {
				t.Fatalf("Next() = %v, %v, want %v, nil", v, err, want)
			}
		}
		w.Stop()
		stuck.Stop()
		shutdown(t, b)
	})
}

func TestStopClosesEventsAndKeepsBufferedValues(t *testing.T) {
	for _, mode := range readModes {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := broadcast.New[int](broadcast.Options{})
				w := watchMode(t, b, mode.mode)
				publish(t, b, 1, 2, 3)
				synctest.Wait() // the three are queued for w
				w.Stop()
				w.Stop() // idempotent
				if got, want := mode.read(t, w), []int{1, 2, 3}; !slices.Equal(got, want) {
					t.Errorf("after Stop read %v, want %v", got, want)
				}
				publish(t, b, 4)
				if got := mode.read(t, w); len(got) != 0 {
					t.Errorf("stopped watcher got %v", got)
				}
				if n := b.Stats().Watchers; n != 0 {
					t.Errorf("Stats().Watchers = %d after Stop, want 0", n)
				}
				shutdown(t, b)
			})
		})
	}
}

func TestStopFromManyGoroutines(t *testing.T) {
	b := newB[int](t, broadcast.Options{})
	w := watchChanT(t, b)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(w.Stop)
	}
	wg.Wait()
	if _, ok := <-w.Events(); ok {
		t.Error("Events() delivered a value after Stop")
	}
}

// TestClosedWhenStopReturns checks that neither read waits once Stop has
// returned: the watcher is closed by then, not some time later.
func TestClosedWhenStopReturns(t *testing.T) {
	b := newB[int](t, broadcast.Options{})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 200 {
		w := watchMode(t, b, broadcast.ReadMode(i%2)) // a queue and a channel watcher in turn
		w.Stop()
		if _, err := w.Next(cancelled); !errors.Is(err, broadcast.ErrClosed) {
			t.Fatalf("Next() once Stop returned = %v, want ErrClosed", err)
		}
	}
}

// TestStopWhileDistributorBlockedOnAnother is apimachinery's watcher-stop
// deadlock: the distributor waits on a full Block watcher nobody reads, and
// stopping another watcher (or the stuck one, from the reading side) must
// not wait for it. The values are published one round apart, so that the
// distributor hands 1 to both and then waits in stuck with 2: had both
// come in one round, stuck would have taken 1 and then waited, and other
// got nothing.
func TestStopWhileDistributorBlockedOnAnother(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := broadcast.New[int](broadcast.Options{QueueLength: 1})
		stuck := watchT(t, b) // first in line, never read
		other := watchChanT(t, b)
		publish(t, b, 1)
		synctest.Wait() // 1 is in both: stuck is full
		publish(t, b, 2)
		synctest.Wait() // the distributor waits for room in stuck
		other.Stop()    // must return while the distributor is blocked
		if got := drain(t, other); !slices.Equal(got, []int{1}) {
			t.Errorf("other got %v, want [1] (the distributor never reached it with 2)", got)
		}
		stuck.Stop() // must also return: it frees the distributor
		if got := drain(t, stuck); !slices.Equal(got, []int{1}) {
			t.Errorf("stuck got %v, want [1]", got)
		}
		shutdown(t, b)
	})
}

func TestStopFromInsideTheReadLoop(t *testing.T) {
	for _, mode := range readModes[:2] {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := broadcast.New[int](broadcast.Options{QueueLength: 1})
				w := watchMode(t, b, mode.mode)
				done := make(chan []int)
				go func() {
					var got []int
					if mode.name == "Events" {
						for v := range w.Events() {
							got = append(got, v)
							w.Stop()
						}
					} else {
						for v := range w.All() {
							got = append(got, v)
							w.Stop()
						}
					}
					done <- got
				}()
				publish(t, b, 1, 2, 3, 4)
				if got := <-done; len(got) == 0 || got[0] != 1 {
					t.Errorf("got %v, want to start with 1", got)
				}
				shutdown(t, b)
			})
		})
	}
}

func TestAfterShutdown(t *testing.T) {
	b := broadcast.New[int](broadcast.Options{})
	w1, _ := b.Watch()
	w2, _ := b.WatchWith(broadcast.WatchOptions{Read: broadcast.ReadChannel})
	publish(t, b, 1, 2, 3)
	shutdown(t, b)

	if _, err := b.Watch(); !errors.Is(err, broadcast.ErrClosed) {
		t.Errorf("Watch() error = %v, want ErrClosed", err)
	}
	if _, err := b.WatchWith(broadcast.WatchOptions{Read: broadcast.ReadChannel}, 1); !errors.Is(err, broadcast.ErrClosed) {
		t.Errorf("WatchWith(ReadChannel, 1) error = %v, want ErrClosed", err)
	}
	if _, err := b.WatchWith(broadcast.WatchOptions{}); !errors.Is(err, broadcast.ErrClosed) {
		t.Errorf("WatchWith() error = %v, want ErrClosed", err)
	}
	if err := b.Publish(context.Background(), 4); !errors.Is(err, broadcast.ErrClosed) {
		t.Errorf("Publish() error = %v, want ErrClosed", err)
	}
	if sent, err := b.TryPublish(4); sent || !errors.Is(err, broadcast.ErrClosed) {
		t.Errorf("TryPublish() = %v, %v, want false, ErrClosed", sent, err)
	}
	shutdown(t, b) // twice is fine
	// Everything queued before Shutdown was delivered, then the watchers
	// were closed.
	for i, w := range []*broadcast.Watcher[int]{w1, w2} {
		if got := drain(t, w); !slices.Equal(got, []int{1, 2, 3}) {
			t.Errorf("watcher %d got %v, want [1 2 3]", i, got)
		}
		w.Stop() // no-op, no panic
		if _, err := w.Next(context.Background()); !errors.Is(err, broadcast.ErrClosed) {
			t.Errorf("Next() after Shutdown error = %v, want ErrClosed", err)
		}
	}
	if s := b.Stats(); s.Watchers != 0 || s.Published != 3 {
		t.Errorf("Stats() = %+v, want 0 watchers, 3 published", s)
	}
}

// TestClosedErrorsNameTheCall: each call that meets a closed broadcaster
// or watcher returns an error that wraps ErrClosed and names the call;
// returning it allocates nothing.
func TestClosedErrorsNameTheCall(t *testing.T) {
	b := broadcast.New[int](broadcast.Options{})
	w, _ := b.Watch()
	shutdown(t, b)
	_, watchErr := b.Watch()
	_, watchWithErr := b.WatchWith(broadcast.WatchOptions{})
	_, tryErr := b.TryPublish(1)
	_, nextErr := w.Next(context.Background())
	for call, err := range map[string]error{
		"Watch":        watchErr,
		"WatchWith":    watchWithErr,
		"Publish":      b.Publish(context.Background(), 1),
		"TryPublish":   tryErr,
		"Watcher.Next": nextErr,
		"Flush":        b.Flush(context.Background()),
	} {
		named := func(sep string) bool { return strings.HasPrefix(err.Error(), "broadcast: "+call+sep) }
		if !errors.Is(err, broadcast.ErrClosed) || !(named(" ") || named(":")) {
			t.Errorf("%s on a closed broadcaster = %v, want an error naming %s that wraps ErrClosed", call, err, call)
		}
	}
	if a := testing.AllocsPerRun(100, func() { b.TryPublish(1) }); a != 0 {
		t.Errorf("TryPublish after Shutdown allocates %v", a)
	}
}

func TestShutdownWithUnreadBlockWatcherEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := broadcast.New[int](broadcast.Options{QueueLength: 2, IncomingQueueLength: 2})
		stuck := watchT(t, b)
		publish(t, b, 0, 1, 2, 3, 4) // 0,1 queued for stuck; 2 waits; 3,4 in the incoming queue
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		err := b.Shutdown(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown() = %v, want context.DeadlineExceeded", err)
		}
		if waited := time.Since(start); waited != time.Minute {
			t.Errorf("Shutdown returned after %v, want at its deadline %v", waited, time.Minute)
		}
		if got := drain(t, stuck); !slices.Equal(got, []int{0, 1}) {
			t.Errorf("stuck watcher got %v, want [0 1]", got)
		}
		if got := stuck.Dropped(); got != 3 {
			t.Errorf("Dropped() = %d, want 3 (values 2, 3, 4 abandoned)", got)
		}
		if s := b.Stats(); s.DroppedShutdown != 3 || s.Watchers != 0 {
			t.Errorf("Stats() = %+v, want DroppedShutdown 3, Watchers 0", s)
		}
		if err := b.Shutdown(context.Background()); !errors.Is(err, broadcast.ErrClosed) {
			t.Errorf("second Shutdown() = %v, want ErrClosed (values were abandoned)", err)
		}
	})
}

// TestShutdownReportsValuesAnotherShutdownAbandoned: a Shutdown waiting
// with a context that never ends, when a concurrent Shutdown's context
// ends and values are abandoned, returns ErrClosed, as does every later
// Shutdown and Flush: only nil says nothing queued was lost so.
func TestShutdownReportsValuesAnotherShutdownAbandoned(t *testing.T) {
	b := broadcast.New[int](broadcast.Options{QueueLength: 1})
	w, err := b.Watch() // Block, never read: 2 and 3 find no room
	if err != nil {
		t.Fatal(err)
	}
	publish(t, b, 1, 2, 3)
	patient := make(chan error, 1)
	go func() { patient <- b.Shutdown(context.Background()) }()
	<-b.Done() // the patient Shutdown has begun
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Shutdown(ended); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown(ended context) = %v, want context.Canceled", err)
	}
	select {
	case err := <-patient:
		if !errors.Is(err, broadcast.ErrClosed) {
			t.Errorf("Shutdown(Background) = %v, want ErrClosed (values were abandoned)", err)
		}
	case <-time.After(failsafe):
		t.Fatal("Shutdown(Background) still waits after the distributor exited")
	}
	if err := b.Shutdown(context.Background()); !errors.Is(err, broadcast.ErrClosed) {
		t.Errorf("later Shutdown() = %v, want ErrClosed", err)
	}
	if err := b.Flush(context.Background()); !errors.Is(err, broadcast.ErrClosed) {
		t.Errorf("later Flush() = %v, want ErrClosed", err)
	}
	if s := b.Stats(); s.DroppedShutdown != 2 || w.Dropped() != 2 {
		t.Errorf("Stats().DroppedShutdown = %d, Dropped() = %d; want 2 each", s.DroppedShutdown, w.Dropped())
	}
	if got := drain(t, w); !slices.Equal(got, []int{1}) {
		t.Errorf("watcher read %v, want [1]", got)
	}
}

func TestShutdownWaitsForSlowReader(t *testing.T) {
	b := broadcast.New[int](broadcast.Options{QueueLength: 1, IncomingQueueLength: 1})
	w := watchT(t, b)
	publish(t, b, 0)
	got := make(chan []int)
	go func() { got <- drain(t, w) }()
	publish(t, b, 1, 2, 3)
	shutdown(t, b) // lossless: waits for the reader
	if g := <-got; !slices.Equal(g, []int{0, 1, 2, 3}) {
		t.Errorf("got %v, want [0 1 2 3]", g)
	}
}

func TestPublishBlockedOnFullIncomingQueue(t *testing.T) {
	t.Run("context ends", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b, stuck := stalled(t)
			ctx, cancel := context.WithCancel(context.Background())
			res := make(chan error, 1)
			go func() { res <- b.Publish(ctx, 99) }()
			synctest.Wait()
			select {
			case err := <-res:
				t.Fatalf("Publish returned %v on a full queue", err)
			default:
			}
			cancel()
			if err := <-res; !errors.Is(err, context.Canceled) {
				t.Errorf("Publish() = %v, want context.Canceled", err)
			}
			stuck.Stop()
			shutdown(t, b)
		})
	})
	t.Run("shutdown begins", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b, stuck := stalled(t)
			res := make(chan error, 1)
			go func() { res <- b.Publish(context.Background(), 99) }()
			synctest.Wait()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := b.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Shutdown() = %v, want context.DeadlineExceeded (stuck watcher)", err)
			}
			if err := <-res; !errors.Is(err, broadcast.ErrClosed) {
				t.Errorf("Publish() = %v, want ErrClosed", err)
			}
			stuck.Stop()
		})
	})
	t.Run("room appears", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b, stuck := stalled(t)
			res := make(chan error, 1)
			go func() { res <- b.Publish(context.Background(), 99) }()
			synctest.Wait()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if got, err := stuck.Next(ctx); got != 0 || err != nil {
				t.Fatalf("Next() = %v, %v", got, err)
			}
			if err := <-res; err != nil {
				t.Errorf("Publish() = %v, want nil once room appeared", err)
			}
			stuck.Stop()
			shutdown(t, b)
		})
	})
	t.Run("already cancelled", func(t *testing.T) {
		b := newB[int](t, broadcast.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := b.Publish(ctx, 1); !errors.Is(err, context.Canceled) {
			t.Errorf("Publish(cancelled ctx) = %v, want context.Canceled", err)
		}
		if s := b.Stats(); s.Published != 0 {
			t.Errorf("Published = %d, want 0", s.Published)
		}
	})
}

// stalled returns a broadcaster whose distributor waits on a full Block
// watcher nobody reads and whose incoming queue is full.
func stalled(t *testing.T) (*broadcast.Broadcaster[int], *broadcast.Watcher[int]) {
	t.Helper()
	b := broadcast.New[int](broadcast.Options{QueueLength: 1, IncomingQueueLength: 1})
	stuck := watchT(t, b)
	publish(t, b, 0, 1, 2) // 0 queued for stuck; 1 waits; 2 in the incoming queue
	synctest.Wait()
	if sent, err := b.TryPublish(3); sent || err != nil {
		t.Fatalf("TryPublish on a full queue = %v, %v, want false, nil", sent, err)
	}
	if got := b.Stats().DroppedIncoming; got != 1 {
		t.Fatalf("DroppedIncoming = %d, want 1", got)
	}
	return b, stuck
}

func TestNextContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := broadcast.New[int](broadcast.Options{})
		w := watchT(t, b)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := w.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Next() on an empty watcher = %v, want DeadlineExceeded", err)
		}
		cw := watchChanT(t, b)
		ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
		defer cancel2()
		if _, err := cw.Next(ctx2); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Next() on an empty channel watcher = %v, want DeadlineExceeded", err)
		}
		w.Stop()
		cw.Stop()
		shutdown(t, b)
	})
}

func TestAllBreakKeepsTheRest(t *testing.T) {
	b := newB[int](t, broadcast.Options{})
	w := watchT(t, b)
	publish(t, b, seq(0, 10)...)
	shutdown(t, b)
	var first []int
	for v := range w.All() {
		first = append(first, v)
		if len(first) == 3 {
			break
		}
	}
	rest := slices.Collect(w.All()) // a different reader after the break
	if got := append(first, rest...); !slices.Equal(got, seq(0, 10)) {
		t.Errorf("All then All again read %v then %v, want 0..9 once each", first, rest)
	}
}

// TestReadInsideAllLoopSkipsItsBatch pins what All and Next document: in
// the body of an All loop, Next and a nested All loop on the same watcher
// do not see the values the loop took and has not yielded. With nothing
// else queued Next waits (its context has ended here); values queued later
// are read there first; the loop then yields the rest of its batch.
func TestReadInsideAllLoopSkipsItsBatch(t *testing.T) {
	b := newB[int](t, broadcast.Options{})
	w := watchT(t, b)
	publish(t, b, seq(0, 10)...)
	flush(t, b)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	var got []int
	for v := range w.All() { // takes 0 to 9
		got = append(got, v)
		if v == 9 {
			break
		}
		if v != 0 {
			continue
		}
		if n, err := w.Next(ended); !errors.Is(err, context.Canceled) {
			t.Fatalf("Next inside the loop, 1 to 9 taken by it = %d, %v; want context.Canceled", n, err)
		}
		publish(t, b, 10, 11)
		flush(t, b)
		n, err := w.Next(ended) // 10 is queued: it wins over the ended context
		if err != nil {
			t.Fatalf("Next inside the loop, 10 queued = %v", err)
		}
		got = append(got, n)
		for u := range w.All() {
			got = append(got, u)
			break // hands nothing back: 11 was the last
		}
	}
	if want := append([]int{0, 10, 11}, seq(1, 10)...); !slices.Equal(got, want) {
		t.Errorf("read %v, want %v", got, want)
	}
}

func TestManyReadersShareOneWatcher(t *testing.T) {
	b := newB[int](t, broadcast.Options{QueueLength: 4})
	w := watchT(t, b)
	const n = 2000
	var mu sync.Mutex
	seen := make(map[int]int)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			ctx := context.Background()
			for {
				var v int
				var err error
				if i%2 == 0 {
					v, err = w.Next(ctx)
				} else {
					ok := false
					for v = range w.All() {
						ok = true
						break
					}
					if !ok {
						err = broadcast.ErrClosed
					}
				}
				if err != nil {
					return
				}
				mu.Lock()
				seen[v]++
				mu.Unlock()
			}
		})
	}
	publish(t, b, seq(0, n)...)
	shutdown(t, b)
	wg.Wait()
	for i := range n {
		if seen[i] != 1 {
			t.Fatalf("value %d read %d times, want once", i, seen[i])
		}
	}
}

func TestConstructorPanicsOnProgrammerErrors(t *testing.T) {
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"negative QueueLength", func() { broadcast.New[int](broadcast.Options{QueueLength: -1}) }, "broadcast: negative Options.QueueLength"},
		{"negative IncomingQueueLength", func() { broadcast.New[int](broadcast.Options{IncomingQueueLength: -1}) }, "broadcast: negative Options.IncomingQueueLength"},
		{"policy out of range", func() { broadcast.New[int](broadcast.Options{Full: 7}) }, "broadcast: invalid Options.Full FullPolicy(7)"},
		{"negative watcher QueueLength", func() {
			b := broadcast.New[int](broadcast.Options{})
			defer b.Shutdown(context.Background())
			b.WatchWith(broadcast.WatchOptions{QueueLength: -1})
		}, "broadcast: negative WatchOptions.QueueLength"},
		{"watcher policy out of range", func() {
			b := broadcast.New[int](broadcast.Options{})
			defer b.Shutdown(context.Background())
			b.WatchWith(broadcast.WatchOptions{Full: -1})
		}, "broadcast: invalid WatchOptions.Full FullPolicy(-1)"},
		{"watcher read mode out of range", func() {
			b := broadcast.New[int](broadcast.Options{})
			defer b.Shutdown(context.Background())
			b.WatchWith(broadcast.WatchOptions{Read: 2})
		}, "broadcast: invalid WatchOptions.Read ReadMode(2)"},
		{"nil context to Publish", func() {
			b := broadcast.New[int](broadcast.Options{})
			defer b.Shutdown(context.Background())
			//lint:ignore SA1012 a nil context is the point of the test
			b.Publish(nil, 1)
		}, "broadcast: nil Context"},
		{"nil context to Shutdown", func() {
			b := broadcast.New[int](broadcast.Options{})
			defer b.Shutdown(context.Background())
			//lint:ignore SA1012 a nil context is the point of the test
			b.Shutdown(nil)
		}, "broadcast: nil Context"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if got := recover(); got != tc.want {
					t.Errorf("panic = %v, want %q", got, tc.want)
				}
			}()
			tc.f()
		})
	}
}

func TestFullPolicyString(t *testing.T) {
	for p, want := range map[broadcast.FullPolicy]string{
		broadcast.Block: "Block", broadcast.DropNewest: "DropNewest", broadcast.DropOldest: "DropOldest", 9: "FullPolicy(9)",
	} {
		if got := p.String(); got != want {
			t.Errorf("FullPolicy(%d).String() = %q, want %q", int(p), got, want)
		}
	}
}

// TestDroppingWatcherNeverSlowsOthers: a watcher that never reads, under
// DropNewest or DropOldest, neither blocks publishers nor costs a reading
// watcher a value; its losses are counted.
func TestDroppingWatcherNeverSlowsOthers(t *testing.T) {
	for _, policy := range []broadcast.FullPolicy{broadcast.DropNewest, broadcast.DropOldest} {
		t.Run(policy.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := broadcast.New[int](broadcast.Options{QueueLength: 4, IncomingQueueLength: 2})
				idle, _ := b.WatchWith(broadcast.WatchOptions{Full: policy})
				reader := watchT(t, b)
				var got []int
				done := make(chan struct{})
				go func() {
					defer close(done)
					for v := range reader.All() {
						got = append(got, v)
					}
				}()
				const n = 1000
				publish(t, b, seq(0, n)...) // would hang here if the idle watcher held the distributor
				shutdown(t, b)
				<-done
				if len(got) != n {
					t.Errorf("reading watcher got %d values, want %d", len(got), n)
				}
				if d := idle.Dropped(); d != n-4 {
					t.Errorf("idle watcher Dropped() = %d, want %d", d, n-4)
				}
				idle.Stop()
			})
		})
	}
}

func TestFlushPlacesEverythingQueuedBefore(t *testing.T) {
	b := broadcast.New[int](broadcast.Options{QueueLength: 1000})
	t.Cleanup(func() { b.Shutdown(context.Background()) })
	w, _ := b.Watch()
	for i := range 500 {
		if err := b.Publish(t.Context(), i); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(t.Context()); err != nil {
		t.Fatalf("Flush() = %v, want nil", err)
	}
	if got := w.Delivered(); got != 500 {
		t.Errorf("Delivered() after Flush = %d, want 500", got)
	}
	b.Shutdown(t.Context())
	if err := b.Flush(t.Context()); !errors.Is(err, broadcast.ErrClosed) {
		t.Errorf("Flush() after Shutdown = %v, want ErrClosed", err)
	}
}

func TestDoneClosedWhenShutdownBegins(t *testing.T) {
	b := broadcast.New[int](broadcast.Options{})
	select {
	case <-b.Done():
		t.Fatal("Done() closed before Shutdown")
	default:
	}
	shutdown(t, b)
	select {
	case <-b.Done():
	default:
		t.Fatal("Done() open after Shutdown")
	}
}

// TestStatsSnapshotKeepsItsSums samples Stats while values flow, and
// checks the sums each snapshot must keep: a value is lost from a queue
// only after it was placed there, and placed or skipped only after it was
// published. Each watcher is read as a reader would, or not at all, so
// that every policy both places and drops.
func TestStatsSnapshotKeepsItsSums(t *testing.T) {
	tests := []struct {
		name   string
		full   broadcast.FullPolicy
		reader bool
	}{
		{"DropOldest unread", broadcast.DropOldest, false},
		{"DropOldest read by All", broadcast.DropOldest, true},
		{"DropNewest read by All", broadcast.DropNewest, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newB[int](t, broadcast.Options{QueueLength: 1, Full: tc.full})
			w, err := b.Watch()
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			defer wg.Wait()
			defer w.Stop()
			if tc.reader {
				wg.Go(func() {
					for range w.All() {
					}
				})
			}
			stop := make(chan struct{})
			defer close(stop)
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if b.Publish(context.Background(), i) != nil {
						return
					}
				}
			})
			for range 50000 {
				s := b.Stats()
				// One watcher: each value published is placed or skipped
				// at most once.
				if s.Delivered+s.DroppedNewest+s.DroppedShutdown > s.Published {
					t.Fatalf("Stats() = %+v: Delivered+DroppedNewest+DroppedShutdown above Published", s)
				}
				if s.DroppedOldest > s.Delivered {
					t.Fatalf("Stats() = %+v: DroppedOldest above Delivered", s)
				}
			}
		})
	}
}

// TestStatsCountsNoWatcherOnceStopReturns: the moment Stop returns, Stats
// no longer counts the watcher, whether the distributor is idle or held
// up by a full Block watcher.
func TestStatsCountsNoWatcherOnceStopReturns(t *testing.T) {
	for _, held := range []bool{false, true} {
		b := broadcast.New[int](broadcast.Options{QueueLength: 1})
		var stuck *broadcast.Watcher[int]
		if held {
			stuck, _ = b.Watch()
			b.Publish(context.Background(), 1)
			b.Publish(context.Background(), 2)
		}
		want := b.Stats().Watchers
		for i := range 5000 {
			w, err := b.Watch()
			if err != nil {
				t.Fatal(err)
			}
			w.Stop()
			if got := b.Stats().Watchers; got != want {
				t.Fatalf("held=%v, watcher %d: Stats().Watchers = %d right after Stop, want %d", held, i, got, want)
			}
		}
		if stuck != nil {
			stuck.Stop()
		}
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPublishAllocatesNothing: "Publish allocates nothing" and
// "TryPublish allocates nothing", once the queues have grown: measured
// over the whole process, so the distributor placing the values in a
// DropOldest queue watcher and a DropNewest channel watcher allocates
// nothing per value either.
func TestPublishAllocatesNothing(t *testing.T) {
	b := newB[int](t, broadcast.Options{QueueLength: 16, IncomingQueueLength: 1 << 12})
	w1, _ := b.WatchWith(broadcast.WatchOptions{Full: broadcast.DropOldest})
	w2, _ := b.WatchWith(broadcast.WatchOptions{Full: broadcast.DropNewest, Read: broadcast.ReadChannel})
	t.Cleanup(w1.Stop)
	t.Cleanup(w2.Stop)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 1 << 13 { // grow every queue to its limit
		if err := b.Publish(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, b)
	if a := testing.AllocsPerRun(2000, func() {
		if err := b.Publish(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("Publish allocates %v per call", a)
	}
	if a := testing.AllocsPerRun(2000, func() { b.TryPublish(1) }); a != 0 {
		t.Errorf("TryPublish allocates %v per call", a)
	}
}

func flush[T any](t *testing.T, b *broadcast.Broadcaster[T]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	if err := b.Flush(ctx); err != nil {
		t.Fatalf("Flush() = %v", err)
	}
}
