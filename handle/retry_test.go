package handle_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/handle"
)

// TestRetryHoldsKeyPlace: a value of key 0 fails twice; while it waits out
// its retries, the next value of key 0 waits behind it and key 1 goes on.
// The waits grow (about RetryMin, then twice that), each within its
// jitter (half to all of it).
func TestRetryHoldsKeyPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		var mu sync.Mutex
		var log []string
		var tries []time.Time
		start := time.Now()
		p := handle.New(w, byKey, func(ctx context.Context, j job) error {
			mu.Lock()
			defer mu.Unlock()
			log = append(log, fmt.Sprintf("%d/%d", j.Key, j.N))
			if j.Key == 0 && j.N == 0 {
				tries = append(tries, time.Now())
				if len(tries) < 3 {
					return errors.New("not yet")
				}
			}
			return nil
		}, handle.Options{Workers: 2, RetryMin: 100 * time.Millisecond, Logger: quiet})
		defer p.Shutdown(context.Background())
		publish(t, b, []job{{Key: 0, N: 0, ID: 0}, {Key: 0, N: 1, ID: 1}, {Key: 1, N: 0, ID: 2}})
		for p.Stats().Handled < 3 {
			time.Sleep(time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		// 0/0 and 1/0 start at once, on two workers, in either order; 1/0
		// goes on while 0/0 waits out its first retry, and 0/1 waits for
		// 0/0.
		want := []string{"0/0", "1/0", "0/0", "0/0", "0/1"}
		if len(log) > 1 && log[0] == "1/0" {
			want[0], want[1] = "1/0", "0/0"
		}
		if fmt.Sprint(log) != fmt.Sprint(want) {
			t.Errorf("handled in order %v, want %v", log, want)
		}
		if len(tries) != 3 {
			t.Fatalf("%d attempts of 0/0, want 3", len(tries))
		}
		first, second := tries[1].Sub(tries[0]), tries[2].Sub(tries[1])
		if first < 50*time.Millisecond || first > 100*time.Millisecond || second < 100*time.Millisecond || second > 200*time.Millisecond {
			t.Errorf("waits before the retries %v and %v, want 50..100ms and 100..200ms (after %v)", first, second, tries[0].Sub(start))
		}
		if s := p.Stats(); s.Retries != 2 || s.Handled != 3 {
			t.Errorf("Stats %+v, want 2 retries, 3 handled", s)
		}
	})
}

// TestPermanentAndMaxAttempts: a Permanent error is dead-lettered after
// one attempt; MaxAttempts 1 means no retry; attempts a durable source
// counted before (Delivery.Attempt) count toward MaxAttempts.
func TestPermanentAndMaxAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newAckSource(false)
		attempts := map[int]int{}
		var mu sync.Mutex
		p := handle.New[job, int](src, byKey, func(ctx context.Context, j job) error {
			mu.Lock()
			attempts[j.ID]++
			mu.Unlock()
			if j.ID == 0 {
				return handle.Permanent(errors.New("no such customer"))
			}
			return errors.New("down")
		}, handle.Options{MaxAttempts: 3, RetryMin: time.Millisecond, Logger: quiet})
		defer p.Shutdown(context.Background())
		src.in <- handle.Delivery[job]{Value: job{Key: 0, ID: 0}, Seq: 1, Attempt: 1}
		src.in <- handle.Delivery[job]{Value: job{Key: 1, ID: 1}, Seq: 2, Attempt: 1}
		src.in <- handle.Delivery[job]{Value: job{Key: 2, ID: 2}, Seq: 3, Attempt: 3} // delivered twice before: one attempt left
		var dead []handle.DeadLetter[job, int]
		for range 3 {
			d, err := p.DeadLetters().Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			dead = append(dead, d)
		}
		mu.Lock()
		defer mu.Unlock()
		if attempts[0] != 1 || attempts[1] != 3 || attempts[2] != 1 {
			t.Errorf("attempts %v, want 1 (permanent), 3 (MaxAttempts), 1 (two before)", attempts)
		}
		for _, d := range dead {
			want := map[int]int{0: 1, 1: 3, 2: 3}[d.Value.ID]
			if d.Attempts != want || d.Seq != uint64(d.Value.ID+1) {
				t.Errorf("dead letter of %d: Attempts %d, Seq %d; want %d, %d", d.Value.ID, d.Attempts, d.Seq, want, d.Value.ID+1)
			}
			if d.Value.ID == 0 && !errors.Is(d.Err, handle.ErrPermanent) {
				t.Errorf("dead letter of 0: Err %v, want ErrPermanent", d.Err)
			}
		}
		if err := p.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := src.doneSeqs(); fmt.Sprint(got) != "[1 2 3]" {
			t.Errorf("marked done %v, want [1 2 3]: a dead letter is a fate", got)
		}
	})
}

// TestSeqAndAttemptInCtx: a handler's ctx tells the value's sequence in its
// source and which attempt this is, counting those before a crash; any
// other ctx tells nothing.
func TestSeqAndAttemptInCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newAckSource(false)
		var mu sync.Mutex
		var seen []string
		p := handle.New[job, int](src, byKey, func(ctx context.Context, j job) error {
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%d/%d", handle.Seq(ctx), handle.Attempt(ctx)))
			n := len(seen)
			mu.Unlock()
			if n < 2 {
				return errors.New("once")
			}
			return nil
		}, handle.Options{RetryMin: time.Millisecond, Logger: quiet})
		defer p.Shutdown(context.Background())
		src.in <- handle.Delivery[job]{Value: job{ID: 1}, Seq: 42, Attempt: 2}
		for p.Stats().Handled < 1 {
			time.Sleep(time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(seen) != "[42/2 42/3]" {
			t.Errorf("Seq/Attempt seen %v, want [42/2 42/3]", seen)
		}
		if handle.Seq(context.Background()) != 0 || handle.Attempt(context.Background()) != 0 {
			t.Error("Seq or Attempt outside a handler")
		}
	})
}
