package pipeline

import (
	"context"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// TestStampKeepsPastTimesApart: past times given in any order, between
// times of the present or of a clock set back, each get a time of their
// own (a past time given again after another past time took the time it
// had been given before); and a clock standing still for more events than
// a millisecond has nanoseconds still gives each its own time (the
// stamps, run a millisecond ahead of the clock, were taken for past ones
// and started over from the clock's time).
func TestStampKeepsPastTimesApart(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	sequences := map[string][]time.Time{
		"past times out of order":       {at(0), at(-time.Hour), at(-2 * time.Hour), at(-time.Hour), at(-2 * time.Hour), at(-time.Hour)},
		"clock set back, past between":  {at(0), at(-time.Hour), at(-30 * time.Minute), at(-time.Hour), at(-30 * time.Minute), at(-time.Hour)},
		"past times a nanosecond apart": {at(0), at(-time.Hour), at(-time.Hour - 1), at(-time.Hour), at(-time.Hour + 1), at(-time.Hour - 1), at(-time.Hour)},
	}
	for name, seq := range sequences {
		t.Run(name, func(t *testing.T) { stampInOrder(t, seq) })
	}

	t.Run("many times at random", func(t *testing.T) {
		p := New(Options{Name: "test", QueueLength: 1, Logger: klog.Background()}, byReason(100))
		defer p.Shutdown(context.Background())
		instants := []time.Time{at(0), at(-time.Hour), at(-time.Hour + 1), at(-time.Hour + 3), at(-time.Minute), at(-2 * time.Millisecond), at(-time.Millisecond)}
		seen := map[int64]bool{p.Stamp(t0).UnixNano(): true} // the present: the others are past
		stampConcurrently(t, p, instants, seen, func(i, g int) int { return i*7 + g*3 + i/5 })
	})

	t.Run("clock standing still", func(t *testing.T) {
		p := New(Options{Name: "test", QueueLength: 1, Logger: klog.Background()}, byReason(100))
		defer p.Shutdown(context.Background())
		n := int(stampWindow) + 10
		for range n {
			p.Stamp(t0)
		}
		if got, want := p.Stamp(t0), at(time.Duration(n)); !got.Equal(want) {
			t.Errorf("after %d calls at one instant, Stamp gave %v, want %v", n, got, want)
		}
	})
}

// stampInOrder stamps the times of seq one after another on a pipeline of
// its own, and reports a time given twice or moved by a microsecond or
// more.
func stampInOrder(t *testing.T, seq []time.Time) {
	t.Helper()
	p := New(Options{Name: "test", QueueLength: 1, Logger: klog.Background()}, byReason(100))
	defer p.Shutdown(context.Background())
	seen := map[int64]int{}
	for i, tm := range seq {
		got := p.Stamp(tm)
		if j, dup := seen[got.UnixNano()]; dup {
			t.Fatalf("call %d (%v) got %v, the time of call %d", i, tm, got, j)
		}
		if d := got.Sub(tm); d < 0 || d >= time.Microsecond {
			t.Errorf("call %d moved %v by %v", i, tm, d)
		}
		seen[got.UnixNano()] = i
	}
}

// stampConcurrently has four goroutines stamp 2000 times each on p, call
// i of goroutine g at instants[pick(i, g) % len(instants)], and reports a
// time given twice or already in seen.
func stampConcurrently(t *testing.T, p *testPipeline, instants []time.Time, seen map[int64]bool, pick func(i, g int) int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				got := p.Stamp(instants[pick(i, g)%len(instants)]).UnixNano()
				mu.Lock()
				dup := seen[got]
				seen[got] = true
				mu.Unlock()
				if dup {
					t.Errorf("Stamp gave %d twice", got)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestStampGivesEveryEventItsOwnTime: times that stand still, or come
// back within a millisecond of the latest, move to the nanosecond after
// it; a time further back (a past event) stays as it is; concurrent
// callers get distinct times.
func TestStampGivesEveryEventItsOwnTime(t *testing.T) {
	p := New(Options{Name: "test", QueueLength: 1, Logger: klog.Background()}, byReason(100))
	defer p.Shutdown(context.Background())
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	past := t0.Add(-time.Hour)
	got := []time.Time{p.Stamp(t0), p.Stamp(t0), p.Stamp(t0.Add(-time.Microsecond)), p.Stamp(past), p.Stamp(past), p.Stamp(t0.Add(time.Second))}
	want := []time.Time{t0, t0.Add(1), t0.Add(2), past, past.Add(1), t0.Add(time.Second)}
	if !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Errorf("Stamp gave %v, want %v", got, want)
	}
	var wg sync.WaitGroup
	stamps := make([][]int64, 4)
	for g := range stamps {
		wg.Go(func() {
			for range 1000 {
				stamps[g] = append(stamps[g], p.Stamp(t0).UnixNano())
			}
		})
	}
	wg.Wait()
	seen := map[int64]bool{}
	for _, s := range stamps {
		for _, n := range s {
			if seen[n] {
				t.Fatalf("Stamp gave %d twice", n)
			}
			seen[n] = true
		}
	}
}

// TestStampLeavesNoInstantBehind: a time a millisecond or more after the
// latest (a past event given a time ahead of a clock standing still, a
// clock stepped on) leaves the instant the clock stood at behind, and the
// times returned there are kept apart from the times returned once the
// clock stands there again, or is set back to it (the first of those took
// the time of the first event at that instant). A time too far back for
// its difference to the latest to fit in an int64 stays as it is (it was
// taken for the present and moved by centuries).
func TestStampLeavesNoInstantBehind(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	sequences := map[string][]time.Time{
		"a past event ahead of the clock": {at(0), at(0), at(time.Hour), at(0), at(0), at(time.Hour), at(0)},
		"clock stepped on and set back":   {at(0), at(0), at(time.Second), at(time.Second), at(0), at(time.Second), at(0)},
		"clock set back twice":            {at(0), at(time.Second), at(2 * time.Second), at(0), at(time.Second), at(0), at(time.Second)},
	}
	for name, seq := range sequences {
		t.Run(name, func(t *testing.T) { stampInOrder(t, seq) })
	}

	t.Run("concurrent callers, instants apart", func(t *testing.T) {
		p := New(Options{Name: "test", QueueLength: 1, Logger: klog.Background()}, byReason(100))
		defer p.Shutdown(context.Background())
		instants := []time.Time{at(0), at(time.Second), at(-time.Hour), at(2 * time.Second), at(time.Hour), at(time.Millisecond)}
		stampConcurrently(t, p, instants, map[int64]bool{}, func(i, g int) int { return i*5 + g*3 + i/7 })
	})

	t.Run("centuries back", func(t *testing.T) {
		p := New(Options{Name: "test", QueueLength: 1, Logger: klog.Background()}, byReason(100))
		defer p.Shutdown(context.Background())
		p.Stamp(t0)
		old := time.Date(1700, 1, 1, 0, 0, 0, 0, time.UTC)
		if got := p.Stamp(old); !got.Equal(old) {
			t.Errorf("Stamp(%v) = %v, want it as it is", old, got)
		}
	})
}

var reportedRe = regexp.MustCompile(`"droppedSinceLastReport"=(\d+)`)

// hookClock is the real clock that runs hook, if set, in Now.
type hookClock struct {
	clock.RealClock
	hook func()
}

func (c *hookClock) Now() time.Time {
	if h := c.hook; h != nil {
		c.hook = nil
		h()
	}
	return time.Now()
}
