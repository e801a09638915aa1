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

// failingSink is an AckSource whose DeadLetter fails its first fails
// calls, as a dead-letter topic out of reach does.
type failingSink struct {
	*ackSource
	fails atomic.Int32
}

func (s *failingSink) DeadLetter(ctx context.Context, seq uint64, f handle.Failure) error {
	if s.fails.Add(-1) >= 0 {
		return errors.New("dead-letter topic out of reach")
	}
	return s.ackSource.DeadLetter(ctx, seq, f)
}

// TestDeadLetterStoreRetriedWithoutHandler: a dead letter the source
// could not store is stored again after a wait; the handler, which gave
// the value up for good (Permanent), is not called again.
func TestDeadLetterStoreRetriedWithoutHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &failingSink{ackSource: newAckSource(true)}
		src.fails.Store(1)
		var calls atomic.Int32
		release := make(chan struct{})
		p := handle.New[job, int](src, byKey, func(_ context.Context, j job) error {
			if j.Key == 2 {
				<-release
				return nil
			}
			calls.Add(1)
			return handle.Permanent(errors.New("no"))
		}, handle.Options{Logger: quiet, RetryMin: time.Millisecond, RetryMax: time.Millisecond})
		src.in <- handle.Delivery[job]{Value: job{Key: 1, ID: 1}, Seq: 7, Attempt: 1}
		for p.Stats().DeadLettered < 1 {
			time.Sleep(time.Millisecond)
		}
		// A key held up in its handler now is the one Blocked names.
		src.in <- handle.Delivery[job]{Value: job{Key: 2, ID: 2}, Seq: 8, Attempt: 1}
		for p.Stats().InFlight < 1 {
			time.Sleep(time.Millisecond)
		}
		if b := p.Stats().Blocked; b == nil || b.Key != 2 {
			t.Errorf("Stats().Blocked = %+v with key 2 in its handler, want key 2", b)
		}
		close(release)
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("the handler ran %d times for a value it failed permanently, want 1 (only the store is tried again)", n)
		}
		if s := p.Stats(); s.Retries != 0 {
			t.Errorf("Stats().Retries = %d, want 0: storing a dead letter again is no attempt of the handler", s.Retries)
		}
	})
}
