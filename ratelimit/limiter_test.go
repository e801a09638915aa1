package ratelimit_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"

	"github.com/heraldgo/herald/ratelimit"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func TestBurstThenRefill(t *testing.T) {
	l := ratelimit.New[string](ratelimit.Options{}) // 25 burst, 1 per 300 s
	for i := range 25 {
		if !l.AllowAt("pod/a", t0) {
			t.Fatalf("call %d refused within the burst", i)
		}
	}
	if l.AllowAt("pod/a", t0) {
		t.Fatal("26th call at the same instant allowed")
	}
	if !l.AllowAt("pod/b", t0) {
		t.Fatal("another key shares the bucket")
	}
	if l.AllowAt("pod/a", t0.Add(299*time.Second)) {
		t.Error("allowed before a token was refilled (299 s)")
	}
	if !l.AllowAt("pod/a", t0.Add(300*time.Second)) {
		t.Error("refused once a token was refilled (300 s)")
	}
}

func TestEvictedKeyComesBackFull(t *testing.T) {
	l := ratelimit.New[int](ratelimit.Options{Burst: 1, Size: 2})
	l.AllowAt(1, t0)
	if l.AllowAt(1, t0) {
		t.Fatal("burst 1 allowed twice")
	}
	l.AllowAt(2, t0)
	l.AllowAt(3, t0) // evicts 1, the least recently used
	if got := l.Len(); got != 2 {
		t.Errorf("Len() = %d, want 2", got)
	}
	if got := l.Evicted(); got != 1 {
		t.Errorf("Evicted() = %d, want 1", got)
	}
	if !l.AllowAt(1, t0) {
		t.Error("evicted key did not come back with a full bucket")
	}
}

func TestRecentlyUsedKeyIsKept(t *testing.T) {
	l := ratelimit.New[int](ratelimit.Options{Burst: 1, Size: 2})
	l.AllowAt(1, t0)
	l.AllowAt(2, t0)
	l.AllowAt(1, t0) // 1 is now the most recently used
	l.AllowAt(3, t0) // evicts 2
	if l.AllowAt(1, t0) {
		t.Error("key 1 was evicted instead of the least recently used")
	}
}

func TestInfiniteLimit(t *testing.T) {
	l := ratelimit.New[int](ratelimit.Options{Limit: rate.Inf, Burst: 1})
	for range 100 {
		if !l.AllowAt(1, t0) {
			t.Fatal("rate.Inf refused")
		}
	}
}

func TestConcurrentAllow(t *testing.T) {
	l := ratelimit.New[int](ratelimit.Options{Burst: 100})
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if l.AllowAt(7, t0) {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if allowed != 100 {
		t.Errorf("allowed %d of 400 at one instant, want the burst, 100", allowed)
	}
}

func TestNewPanicsOnNegativeOptions(t *testing.T) {
	for _, opts := range []ratelimit.Options{{Limit: -1}, {Burst: -1}, {Size: -1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%+v) did not panic", opts)
				}
			}()
			ratelimit.New[int](opts)
		}()
	}
}

func TestThrottleWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th := ratelimit.NewThrottle(10, 1) // 10 per second, no burst
		start := time.Now()
		for range 5 {
			if err := th.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := time.Since(start), 400*time.Millisecond; got != want {
			t.Errorf("5 writes at 10/s took %v, want %v", got, want)
		}
	})
}

func TestThrottleWaitEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th := ratelimit.NewThrottle(0.001, 1) // one per 1000 s
		th.Wait(context.Background())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- th.Wait(ctx) }()
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Wait = %v, want context.Canceled", err)
		}
		short, cancel2 := context.WithTimeout(context.Background(), time.Second)
		defer cancel2()
		if err := th.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Wait beyond the deadline = %v, want DeadlineExceeded", err)
		}
	})
}

func TestThrottleUnlimited(t *testing.T) {
	th := ratelimit.NewThrottle(0, 0)
	for range 1000 {
		if !th.AllowAt(t0) {
			t.Fatal("zero limit throttled")
		}
	}
}
