package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"

	"github.com/heraldgo/herald/ratelimit"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// call is one AllowAt call at t0+at and the answer it must get.
type call struct {
	key  string
	at   time.Duration
	want bool
}

// times repeats c n times.
func times(n int, c call) []call {
	cs := make([]call, n)
	for i := range cs {
		cs[i] = c
	}
	return cs
}

func TestLimiterAllowAt(t *testing.T) {
	tests := []struct {
		name  string
		opts  ratelimit.Options
		calls []call
	}{
		{
			name: "defaults: a burst of 25, then one token per 300 s",
			opts: ratelimit.Options{},
			calls: append(times(25, call{"a", 0, true}), []call{
				{"a", 0, false},
				{"a", 299 * time.Second, false},
				{"a", 300 * time.Second, true},
				{"a", 300 * time.Second, false},
				{"a", 900 * time.Second, true}, // 600 s: two tokens
				{"a", 900 * time.Second, true},
				{"a", 900 * time.Second, false},
			}...),
		},
		{
			name: "each key has its own bucket",
			opts: ratelimit.Options{Burst: 1},
			calls: []call{
				{"a", 0, true},
				{"a", 0, false},
				{"b", 0, true},
				{"b", 0, false},
			},
		},
		{
			name: "refill at exact times, capped at the burst",
			opts: ratelimit.Options{Limit: 1, Burst: 2},
			calls: []call{
				{"a", 0, true},
				{"a", 0, true},
				{"a", 0, false},
				{"a", 999 * time.Millisecond, false},
				{"a", time.Second, true},
				{"a", time.Second, false},
				{"a", 5 * time.Second, true}, // 4 s idle: still only 2 tokens
				{"a", 5 * time.Second, true},
				{"a", 5 * time.Second, false},
			},
		},
		{
			name:  "rate.Inf never limits",
			opts:  ratelimit.Options{Limit: rate.Inf, Burst: 1},
			calls: times(100, call{"a", 0, true}),
		},
		{
			name: "an evicted key comes back with a full bucket",
			opts: ratelimit.Options{Burst: 1, Size: 2},
			calls: []call{
				{"a", 0, true},
				{"a", 0, false},
				{"b", 0, true},
				{"c", 0, true}, // evicts a, the least recently used
				{"a", 0, true},
			},
		},
		{
			name: "a key in use is kept, the least recently used goes",
			opts: ratelimit.Options{Burst: 1, Size: 2},
			calls: []call{
				{"a", 0, true},
				{"b", 0, true},
				{"a", 0, false}, // a is now more recent than b
				{"c", 0, true},  // evicts b
				{"a", 0, false},
				{"b", 0, true},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := ratelimit.New[string](tc.opts)
			for i, c := range tc.calls {
				if got := l.AllowAt(c.key, t0.Add(c.at)); got != c.want {
					t.Errorf("call %d: AllowAt(%q, t0+%v) = %v, want %v", i, c.key, c.at, got, c.want)
				}
			}
		})
	}
}

// TestKeyNotEqualToItself pins what AllowAt documents of a NaN key: it
// is never found again, so every call is allowed and adds a key.
func TestKeyNotEqualToItself(t *testing.T) {
	type withFloat struct {
		name string
		f    float64
	}
	tests := []struct {
		name string
		key  withFloat
	}{
		{"NaN", withFloat{"a", math.NaN()}},
		{"a number", withFloat{"a", 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := ratelimit.New[withFloat](ratelimit.Options{Burst: 1, Size: 2})
			l.AllowAt(withFloat{"other", 0}, t0)
			allowed := 0
			for range 3 {
				if l.AllowAt(tc.key, t0) {
					allowed++
				}
			}
			wantAllowed, wantEvicted := 1, uint64(0)
			if tc.key.f != tc.key.f {
				wantAllowed, wantEvicted = 3, 2 // the other key, then a NaN one
			}
			if allowed != wantAllowed || l.Evicted() != wantEvicted {
				t.Errorf("3 calls of AllowAt(%v) allowed %d, Evicted() = %d; want %d, %d", tc.key, allowed, l.Evicted(), wantAllowed, wantEvicted)
			}
		})
	}
}

func TestLenAndEvicted(t *testing.T) {
	l := ratelimit.New[int](ratelimit.Options{Size: 3})
	tests := []struct {
		keys        []int
		wantLen     int
		wantEvicted uint64
	}{
		{nil, 0, 0},
		{[]int{1, 2}, 2, 0},
		{[]int{1, 2, 2, 1}, 2, 0}, // known keys: nothing added
		{[]int{3}, 3, 0},
		{[]int{4, 5, 6, 7}, 3, 4},
		{[]int{6, 7}, 3, 4},
	}
	for _, tc := range tests {
		for _, k := range tc.keys {
			l.AllowAt(k, t0)
		}
		if got, gotEv := l.Len(), l.Evicted(); got != tc.wantLen || gotEv != tc.wantEvicted {
			t.Errorf("after keys %v: Len() = %d, Evicted() = %d; want %d, %d", tc.keys, got, gotEv, tc.wantLen, tc.wantEvicted)
		}
	}
}

// TestConcurrentAllow runs 8 goroutines on one key at one instant: exactly
// the burst is allowed. Other goroutines churn a small cache meanwhile, for
// the race detector.
func TestConcurrentAllow(t *testing.T) {
	const burst, goroutines, each = 100, 8, 50
	l := ratelimit.New[int](ratelimit.Options{Burst: burst, Size: 16})
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				if l.AllowAt(-1, t0) {
					allowed.Add(1)
				}
				l.AllowAt(g*each+i, t0) // churn: forces evictions
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != burst {
		t.Errorf("%d goroutines × %d calls at one instant: %d allowed, want %d", goroutines, each, got, burst)
	}
	if got := l.Len(); got > 16 {
		t.Errorf("Len() = %d, want at most Size 16", got)
	}
}

// TestAllowAtAllocations pins what AllowAt's doc says: once a key is
// stored (its first call), no call on it allocates: its token bucket
// lives in its cache entry.
func TestAllowAtAllocations(t *testing.T) {
	const n = 1000
	l := ratelimit.New[int](ratelimit.Options{Size: 2 * n})
	for k := range n {
		l.AllowAt(k, t0) // every key's first call
	}
	for i, want := range []float64{0, 0, 0} { // every key's second, third and fourth call
		k := 0
		// AllocsPerRun calls once more than it counts: n calls, one per key.
		got := testing.AllocsPerRun(n-1, func() { l.AllowAt(k, t0); k++ })
		if got != want {
			t.Errorf("call %d on a key: %v allocations, want %v", i+2, got, want)
		}
	}
}

// TestNewPanicsOnInvalidOptions: a negative number, or a NaN limit (which
// x/time/rate would take as no limit at all), is refused by name.
func TestNewPanicsOnInvalidOptions(t *testing.T) {
	tests := []struct {
		opts ratelimit.Options
		want string
	}{
		{ratelimit.Options{Limit: -1}, "ratelimit: negative Options.Limit"},
		{ratelimit.Options{Limit: rate.Limit(math.NaN())}, "ratelimit: NaN Options.Limit"},
		{ratelimit.Options{Burst: -1}, "ratelimit: negative Options.Burst"},
		{ratelimit.Options{Size: -1}, "ratelimit: negative Options.Size"},
	}
	for _, tc := range tests {
		got := panicValue(func() { ratelimit.New[int](tc.opts) })
		if got != tc.want {
			t.Errorf("New(%+v) panicked with %v, want %q", tc.opts, got, tc.want)
		}
	}
}

// TestAllowAtPanicsOnUnhashableKey: a key that cannot be hashed is a
// programming error, reported by a panic that names the package and the
// key's type; the Limiter goes on serving other keys.
func TestAllowAtPanicsOnUnhashableKey(t *testing.T) {
	type withSlice struct{ v any }
	tests := []struct {
		name string
		key  any
		want string
	}{
		{"slice", []int{1}, "ratelimit: key of type []int cannot be hashed"},
		{"map", map[string]int{}, "ratelimit: key of type map[string]int cannot be hashed"},
		{"func", func() {}, "ratelimit: key of type func() cannot be hashed"},
		{"struct holding a slice", withSlice{[]byte("x")}, "ratelimit: key of type ratelimit_test.withSlice cannot be hashed"},
	}
	l := ratelimit.New[any](ratelimit.Options{Burst: 1})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := panicValue(func() { l.AllowAt(tc.key, t0) }).(string)
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("AllowAt(%T) panicked with %q, want it to start with %q", tc.key, got, tc.want)
			}
			if !l.AllowAt(tc.name, t0) || l.AllowAt(tc.name, t0) {
				t.Errorf("after the panic, a hashable key's bucket of 1 allows other than once")
			}
		})
	}
}

// panicValue returns what f panics with, or nil.
func panicValue(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

func TestThrottleAllowAt(t *testing.T) {
	tests := []struct {
		name  string
		limit rate.Limit
		burst int
		calls []call // key unused
	}{
		{"10 per second, burst 2", 10, 2, []call{
			{"", 0, true},
			{"", 0, true},
			{"", 0, false},
			{"", 99 * time.Millisecond, false},
			{"", 100 * time.Millisecond, true},
			{"", 100 * time.Millisecond, false},
		}},
		{"zero burst means 1", 10, 0, []call{
			{"", 0, true},
			{"", 0, false},
			{"", 100 * time.Millisecond, true},
		}},
		{"rate.Inf never throttles", rate.Inf, 1, times(1000, call{"", 0, true})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			th := ratelimit.NewThrottle(tc.limit, tc.burst)
			for i, c := range tc.calls {
				if got := th.AllowAt(t0.Add(c.at)); got != c.want {
					t.Errorf("call %d: AllowAt(t0+%v) = %v, want %v", i, c.at, got, c.want)
				}
			}
		})
	}
}

// TestThrottleWait checks when each write proceeds, in a synctest bubble
// where waiting takes no real time.
func TestThrottleWait(t *testing.T) {
	tests := []struct {
		limit rate.Limit
		burst int
		want  []time.Duration // when each Wait returns
	}{
		{10, 1, []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}},
		{10, 3, []time.Duration{0, 0, 0, 100 * time.Millisecond, 200 * time.Millisecond}},
		{rate.Inf, 0, []time.Duration{0, 0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("limit=%v,burst=%d", tc.limit, tc.burst), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				th := ratelimit.NewThrottle(tc.limit, tc.burst)
				start := time.Now()
				for i, want := range tc.want {
					if err := th.Wait(context.Background()); err != nil {
						t.Fatalf("Wait %d = %v, want nil", i, err)
					}
					if got := time.Since(start); got != want {
						t.Errorf("Wait %d returned at %v, want %v", i, got, want)
					}
				}
			})
		})
	}
}

func TestThrottleWaitEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th := ratelimit.NewThrottle(0.001, 1) // one per 1000 s
		if err := th.Wait(context.Background()); err != nil {
			t.Fatalf("first Wait = %v, want nil (a full bucket)", err)
		}

		// Cancelled while waiting.
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- th.Wait(ctx) }()
		synctest.Wait() // Wait is blocked on its timer
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("Wait cancelled while waiting = %v, want context.Canceled unwrapped", err)
		}

		// A deadline the wait would outlast: at once, and no token taken.
		short, cancelShort := context.WithTimeout(context.Background(), time.Second)
		defer cancelShort()
		start := time.Now()
		if err := th.Wait(short); err != context.DeadlineExceeded {
			t.Errorf("Wait beyond the deadline = %v, want context.DeadlineExceeded", err)
		}
		if got := time.Since(start); got != 0 {
			t.Errorf("Wait beyond the deadline took %v, want 0", got)
		}
		if err := th.Wait(context.Background()); err != nil {
			t.Fatalf("Wait = %v, want nil", err)
		}
		if got, want := time.Since(start), 1000*time.Second; got != want {
			t.Errorf("next write after %v, want %v (the refused Wait took no token)", got, want)
		}

		// An ended context wins even over an available token.
		ended, cancelEnded := context.WithCancel(context.Background())
		cancelEnded()
		free := ratelimit.NewThrottle(rate.Inf, 0)
		if err := free.Wait(ended); !errors.Is(err, context.Canceled) {
			t.Errorf("Wait(cancelled ctx) = %v, want context.Canceled", err)
		}
	})
}

// TestThrottleWaitPanicsOnNilContext: a nil ctx is a programming error,
// named as such, whatever the limit (rate.Limiter dereferenced it).
func TestThrottleWaitPanicsOnNilContext(t *testing.T) {
	for _, limit := range []rate.Limit{0.001, 10, rate.Inf} {
		th := ratelimit.NewThrottle(limit, 1)
		//lint:ignore SA1012 a nil Context is what is tested
		if got := panicValue(func() { _ = th.Wait(nil) }); got != "ratelimit: nil Context" {
			t.Errorf("NewThrottle(%v, 1).Wait(nil) panicked with %v, want %q", limit, got, "ratelimit: nil Context")
		}
	}
}

// TestNewThrottlePanicsOnInvalidInput: as TestNewPanicsOnInvalidOptions,
// for a Throttle.
func TestNewThrottlePanicsOnInvalidInput(t *testing.T) {
	tests := []struct {
		limit rate.Limit
		burst int
		want  string
	}{
		{-1, 1, "ratelimit: negative throttle limit"},
		{0, 1, "ratelimit: zero throttle limit (a bucket that never refills; rate.Inf means no limit)"},
		{rate.Limit(math.NaN()), 1, "ratelimit: NaN throttle limit"},
		{1, -1, "ratelimit: negative throttle burst"},
	}
	for _, tc := range tests {
		if got := panicValue(func() { ratelimit.NewThrottle(tc.limit, tc.burst) }); got != tc.want {
			t.Errorf("NewThrottle(%v, %d) panicked with %v, want %q", tc.limit, tc.burst, got, tc.want)
		}
	}
}
