package wait

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCounterWaitRacesAdvanceAndEnd: waiters with random targets,
// some with contexts cancelled midway, race a goroutine advancing the
// count and an End. Every Wait returns; nil only once the count reached
// its target; ErrEnded only after End began and only for a target the
// count had not reached when End was called; ctx.Err() only for a
// cancelled context; and no waiter is left registered.
func TestCounterWaitRacesAdvanceAndEnd(t *testing.T) {
	for round := range 200 {
		rng := rand.New(rand.NewPCG(uint64(round), 27))
		var c Counter
		var ended atomic.Bool
		var atEnd atomic.Uint64 // the count read just before End
		const waiters = 12
		type result struct {
			target   uint64
			err      error
			canceled bool
		}
		results := make([]result, waiters)
		var wg sync.WaitGroup
		for i := range waiters {
			target := uint64(rng.IntN(40))
			cancelIt := rng.IntN(3) == 0
			wg.Go(func() {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if cancelIt {
					go func() { runtime.Gosched(); cancel() }()
				}
				err := c.Wait(ctx, target)
				results[i] = result{target, err, cancelIt}
				if err == nil && c.Load() < target {
					t.Errorf("Wait(%d) = nil at count %d", target, c.Load())
				}
			})
		}
		var adv sync.WaitGroup
		endAt := uint64(rng.IntN(40))
		adv.Go(func() {
			for n := uint64(1); n <= 30; n++ {
				if n%2 == 0 {
					c.Advance(n)
				} else {
					c.Add(1)
				}
				if n == endAt {
					atEnd.Store(c.Load())
					ended.Store(true)
					c.End()
				}
				if n%5 == 0 {
					runtime.Gosched()
				}
			}
		})
		adv.Wait()
		if !ended.Load() {
			atEnd.Store(c.Load())
			ended.Store(true)
			c.End()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: a Wait never returned", round)
		}
		for _, r := range results {
			switch {
			case r.err == nil:
			case errors.Is(r.err, ErrEnded):
				if r.target <= atEnd.Load() {
					t.Errorf("round %d: Wait(%d) = ErrEnded, but the count was %d before End", round, r.target, atEnd.Load())
				}
			case errors.Is(r.err, context.Canceled):
				if !r.canceled {
					t.Errorf("round %d: Wait(%d) = Canceled without a cancel", round, r.target)
				}
			default:
				t.Errorf("round %d: Wait(%d) = %v", round, r.target, r.err)
			}
		}
		c.mu.Lock()
		left, flagged := len(c.waiters), c.waiting.Load()
		c.mu.Unlock()
		if left != 0 || flagged {
			t.Errorf("round %d: %d waiters left registered, waiting flag %v", round, left, flagged)
		}
	}
}

// TestCounterEdges: a target already reached returns nil at once,
// even on an ended counter; Advance never lowers the count; a waiter
// cancelled while others wait leaves them waiting and registered.
func TestCounterEdges(t *testing.T) {
	var c Counter
	if err := c.Wait(context.Background(), 0); err != nil {
		t.Errorf("Wait(0) = %v", err)
	}
	c.Advance(5)
	c.Advance(2)
	if c.Load() != 5 {
		t.Errorf("Load() = %d after Advance(5), Advance(2)", c.Load())
	}
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	go func() { errs <- c.Wait(ctx, 9) }()
	go func() { errs <- c.Wait(context.Background(), 8) }()
	for {
		c.mu.Lock()
		n := len(c.waiters)
		c.mu.Unlock()
		if n == 2 {
			break
		}
		runtime.Gosched()
	}
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Wait(9) = %v", err)
	}
	c.mu.Lock()
	n, flagged := len(c.waiters), c.waiting.Load()
	c.mu.Unlock()
	if n != 1 || !flagged {
		t.Errorf("after one waiter left: %d registered, waiting flag %v; want 1, true", n, flagged)
	}
	c.Add(3)
	if err := <-errs; err != nil {
		t.Errorf("Wait(8) at count 8 = %v", err)
	}
	c.End()
	if err := c.Wait(context.Background(), 8); err != nil {
		t.Errorf("Wait(8) on an ended counter at 8 = %v, want nil", err)
	}
	if err := c.Wait(context.Background(), 9); !errors.Is(err, ErrEnded) {
		t.Errorf("Wait(9) on an ended counter at 8 = %v, want ErrEnded", err)
	}
}
