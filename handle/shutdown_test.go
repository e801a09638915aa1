package handle_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/handle"
)

// TestShutdownLetsInFlightFinish: Shutdown stops reading, lets the
// handlers in flight finish, abandons what waits (behind its key, or
// waiting out a retry), marks none of those done, and stops the source.
func TestShutdownLetsInFlightFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newAckSource(false)
		release := make(chan struct{})
		var finished atomic.Int64
		p := handle.New[job, int](src, byKey, func(ctx context.Context, j job) error {
			switch j.Key {
			case 0:
				<-release
				finished.Add(1)
				return nil
			case 1:
				return errors.New("fails: waits out a retry")
			}
			return nil
		}, handle.Options{Workers: 2, RetryMin: time.Hour, Logger: quiet})
		src.in <- handle.Delivery[job]{Value: job{Key: 0, ID: 0}, Seq: 1, Attempt: 1}
		src.in <- handle.Delivery[job]{Value: job{Key: 0, N: 1, ID: 1}, Seq: 2, Attempt: 1}
		src.in <- handle.Delivery[job]{Value: job{Key: 1, ID: 2}, Seq: 3, Attempt: 1}
		synctest.Wait() // key 0's first in a handler, its second behind it, key 1's waiting out a retry
		s := p.Stats()
		if s.InFlight != 1 || s.Waiting != 1 || s.Backoff != 1 {
			t.Fatalf("before Shutdown: %+v", s)
		}
		done := make(chan error)
		go func() { done <- p.Shutdown(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Shutdown returned %v with a handler in flight", err)
		default:
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		s = p.Stats()
		checkConserved(t, s)
		if s.Handled != 1 || s.Abandoned != 2 || finished.Load() != 1 {
			t.Errorf("after Shutdown: %+v; want the one in flight handled, two abandoned", s)
		}
		if got := src.doneSeqs(); len(got) != 1 || got[0] != 1 {
			t.Errorf("marked done %v, want [1]: abandoned values are not", got)
		}
		if !src.stopped {
			t.Error("the source was not stopped")
		}
	})
}

// TestShutdownDeadline: a handler that outlives Shutdown's ctx sees its ctx
// end; Shutdown returns ctx.Err(), and the value counts as abandoned
// when its handler returns an error.
func TestShutdownDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		p := handle.New(w, byKey, func(ctx context.Context, j job) error {
			<-ctx.Done()
			return ctx.Err()
		}, handle.Options{Logger: quiet})
		publish(t, b, []job{{ID: 0}})
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown = %v, want DeadlineExceeded", err)
		}
		synctest.Wait()
		if s := p.Stats(); s.Abandoned != 1 || s.InFlight != 0 {
			t.Errorf("Stats %+v, want the value abandoned", s)
		}
		if err := p.Shutdown(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("second Shutdown = %v, want the first's result", err)
		}
	})
}

// TestFlushDuringRetries: Flush waits for a value that waits out retries,
// and returns once it has its fate; a value received after the call does
// not hold it.
func TestFlushDuringRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		var tries atomic.Int64
		p := handle.New(w, byKey, func(ctx context.Context, j job) error {
			if j.ID == 0 && tries.Add(1) < 3 {
				return errors.New("not yet")
			}
			if j.ID == 1 {
				<-ctx.Done() // never finishes before Shutdown
			}
			return nil
		}, handle.Options{RetryMin: time.Second, Logger: quiet})
		publish(t, b, []job{{Key: 0, ID: 0}})
		synctest.Wait()
		flushed := make(chan error)
		go func() { flushed <- p.Flush(context.Background()) }()
		synctest.Wait() // Flush waits
		publish(t, b, []job{{Key: 1, ID: 1}})
		if err := <-flushed; err != nil {
			t.Fatal(err)
		}
		if tries.Load() != 3 {
			t.Errorf("Flush returned after %d attempts, want 3", tries.Load())
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		_ = p.Shutdown(ctx)
	})
}

// TestFlushEndsWithReading: a Flush that waits for values its source still
// holds returns once a Shutdown stops the Pool reading them and the values
// it received have their fates; a Flush after the Shutdown returns at once.
func TestFlushEndsWithReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _, p, release := heldPool(t, func(job) bool { return true }, handle.Options{Workers: 1, QueueLength: 1})
		publish(t, b, jobs(10, 1))
		if err := b.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // one in a handler, the rest in the watcher's queue
		flushed := make(chan error, 1)
		go func() { flushed <- p.Flush(context.Background()) }()
		shut := make(chan error, 1)
		go func() { shut <- p.Shutdown(context.Background()) }()
		synctest.Wait()
		close(release)
		if err := <-shut; err != nil {
			t.Fatal(err)
		}
		if err := <-flushed; err != nil {
			t.Errorf("Flush during Shutdown = %v, want nil", err)
		}
		if err := p.Flush(context.Background()); err != nil {
			t.Errorf("Flush after Shutdown = %v, want nil", err)
		}
		s := p.Stats()
		checkConserved(t, s)
		if s.Handled != 1 || s.Received != 1 {
			t.Errorf("Stats %+v, want the one received handled, the rest left in the source", s)
		}
	})
}
