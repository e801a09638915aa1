package wait_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/internal/wait"
)

func TestCounterReleasesWaitersAtTheirTargets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c wait.Counter
		got := make([]error, 3)
		var wg sync.WaitGroup
		for i, target := range []uint64{2, 5, 9} {
			wg.Go(func() { got[i] = c.Wait(context.Background(), target) })
		}
		synctest.Wait()
		c.Add(2)
		c.Advance(5)
		c.Advance(3) // never lowers the count
		synctest.Wait()
		if got[0] != nil || got[1] != nil || c.Load() != 5 {
			t.Fatalf("after the count reached 5: %v, count %d", got, c.Load())
		}
		c.End()
		wg.Wait()
		if !errors.Is(got[2], wait.ErrEnded) {
			t.Errorf("Wait(9) on an ended counter at 5 = %v, want ErrEnded", got[2])
		}
		if err := c.Wait(context.Background(), 7); !errors.Is(err, wait.ErrEnded) {
			t.Errorf("Wait after End = %v, want ErrEnded at once", err)
		}
		if err := c.Wait(context.Background(), 4); err != nil {
			t.Errorf("Wait for a reached target after End = %v, want nil", err)
		}
		c.Reopen()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := c.Wait(ctx, 7); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Wait after Reopen = %v, want it to wait until ctx ends", err)
		}
	})
}

// TestCounterReleasesEachWaiterAsItsTargetIsReached: Advance and Add
// release a waiter when the count reaches its target exactly, not at the
// next step, whatever order the waiters came in and whichever left.
func TestCounterReleasesEachWaiterAsItsTargetIsReached(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c wait.Counter
		targets := []uint64{4, 9, 3, 6}
		done := make([]bool, len(targets))
		var mu sync.Mutex
		var wg sync.WaitGroup
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for i, target := range targets {
			wctx := context.Background()
			if target == 4 {
				wctx = ctx // leaves before its target
			}
			wg.Go(func() {
				if c.Wait(wctx, target) == nil {
					mu.Lock()
					done[i] = true
					mu.Unlock()
				}
			})
			synctest.Wait()
			if target == 4 {
				cancel()
				synctest.Wait()
			}
		}
		for n := uint64(1); n <= 9; n++ {
			if n%2 == 0 {
				c.Add(1)
			} else {
				c.Advance(n)
			}
			synctest.Wait()
			mu.Lock()
			for i, target := range targets {
				if want := target != 4 && target <= n; done[i] != want {
					t.Errorf("count %d: waiter for %d released %v, want %v", n, target, done[i], want)
				}
			}
			mu.Unlock()
		}
		wg.Wait()
	})
}

// TestCounterReleasesWaitersReachedAsTheyWait: waiters whose targets are
// reached while they begin to wait are all released (no wake-up lost
// between a Wait and an Advance or Add).
func TestCounterReleasesWaitersReachedAsTheyWait(t *testing.T) {
	for range 300 {
		var c wait.Counter
		const waiters, top = 8, 200
		var wg sync.WaitGroup
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs := make(chan error, waiters)
		for range waiters {
			wg.Go(func() {
				for range 20 {
					if err := c.Wait(ctx, min(c.Load()+uint64(rand.IntN(3)), top)); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		for range 2 {
			wg.Go(func() {
				for c.Load() < top {
					if rand.IntN(2) == 0 {
						c.Add(1)
					} else {
						c.Advance(c.Load() + 1)
					}
				}
			})
		}
		wg.Wait()
		cancel()
		close(errs)
		for err := range errs {
			t.Fatalf("a waiter was not released: %v (count %d)", err, c.Load())
		}
	}
}

func TestCounterRace(t *testing.T) {
	var c wait.Counter
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := c.Wait(context.Background(), uint64(100*i)); err != nil {
				t.Error(err)
			}
		})
	}
	for range 800 {
		c.Add(1)
	}
	wg.Wait()
}

func TestQueueHandsOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		q := wait.NewQueue()
		tokens := 0
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				mu.Lock()
				defer mu.Unlock()
				for tokens == 0 {
					ch := q.ParkLocked()
					mu.Unlock()
					<-ch
					mu.Lock()
					q.UnparkLocked()
				}
				tokens--
				wait.Signal(q.WakeLocked()) // leave the condition to the next
			})
		}
		synctest.Wait()
		mu.Lock()
		if q.Parked() != 3 {
			t.Errorf("Parked() = %d, want 3", q.Parked())
		}
		tokens = 3
		c := q.WakeLocked()
		mu.Unlock()
		wait.Signal(c)
		wg.Wait()
	})
}
