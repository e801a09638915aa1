package handle_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/handle"
)

// TestNaNKeysAreEachTheirOwn: a key not equal to itself (a NaN) finds no
// map entry, so each such value is its own key: every value is handled,
// none holds another's lane, and no key is left once all are handled.
func TestNaNKeysAreEachTheirOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		p := handle.New(w, func(j job) float64 {
			if j.ID%2 == 0 {
				return math.NaN()
			}
			return float64(j.Key)
		}, func(context.Context, job) error { return nil }, handle.Options{Workers: 4, Logger: quiet})
		defer p.Shutdown(context.Background())
		publish(t, b, jobs(30000, 50)) // 15 000 NaN keys: past the idle lanes a shard keeps
		_ = b.Flush(context.Background())
		if err := p.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if s := p.Stats(); s.Handled != 30000 || s.Keys != 0 {
			t.Errorf("Stats %+v: want all 30000 handled and no key left", s)
		}
	})
}

// TestAKeyThatCannotBeHashedIsDeadLettered: a key of an interface type
// holding a value that cannot be hashed (a slice) dead-letters its value,
// as a key function that panics does; the others are handled.
func TestAKeyThatCannotBeHashedIsDeadLettered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		p := handle.New(w, func(j job) any {
			if j.ID == 3 {
				return []int{3}
			}
			return j.Key
		}, func(context.Context, job) error { return nil }, handle.Options{Workers: 4, Logger: quiet})
		defer p.Shutdown(context.Background())
		publish(t, b, jobs(10, 5))
		d, err := p.DeadLetters().Next(context.Background())
		if err != nil || d.Value.ID != 3 {
			t.Fatalf("dead letter %+v, %v; want value 3's", d, err)
		}
		_ = b.Flush(context.Background())
		if err := p.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if s := p.Stats(); s.Handled != 9 || s.DeadLettered != 1 {
			t.Errorf("Stats %+v: want 9 handled, 1 dead-lettered", s)
		}
	})
}

// wrapErr is an error whose methods read through its pointer.
type wrapErr struct{ inner error }

func (e *wrapErr) Error() string { return e.inner.Error() }
func (e *wrapErr) Unwrap() error { return e.inner }

// TestAnErrorThatPanicsWhenReadIsAFailure: a handler that returns a typed
// nil pointer whose Error and Unwrap read through it fails its value (a
// dead letter that says so), rather than bringing the process down.
func TestAnErrorThatPanicsWhenReadIsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		p := handle.New(w, byKey, func(context.Context, job) error {
			var e *wrapErr
			return e
		}, handle.Options{Workers: 2, MaxAttempts: 1, Logger: quiet})
		defer p.Shutdown(context.Background())
		publish(t, b, jobs(1, 1))
		d, err := p.DeadLetters().Next(context.Background())
		if err != nil || d.Err == nil {
			t.Fatalf("dead letter %+v, %v; want one with an error", d, err)
		}
		_ = d.Err.Error() // readable
	})
}

// TestASecondShutdownHonoursItsDeadline: while a Shutdown without a
// deadline waits for a handler that ignores its ctx, a second Shutdown
// returns at its own deadline.
func TestASecondShutdownHonoursItsDeadline(t *testing.T) {
	b, w := source(t)
	release, begun := make(chan struct{}), make(chan struct{})
	p := handle.New(w, byKey, func(context.Context, job) error { close(begun); <-release; return nil }, handle.Options{Workers: 1, Logger: quiet})
	publish(t, b, jobs(2, 1)) // the second waits behind the first
	<-begun
	first := make(chan error, 1)
	go func() { first <- p.Shutdown(context.Background()) }()
	for p.Stats().Abandoned != 1 { // a bounded poll: the first Shutdown has begun (it abandons the second)
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	second := make(chan error, 1)
	go func() { second <- p.Shutdown(ctx) }()
	select {
	case err := <-second:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("second Shutdown = %v, want DeadlineExceeded", err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("second Shutdown, deadline 50ms, has not returned after 10s: it waits for the first")
		close(release)
		<-second
		return
	}
	close(release)
	if err := <-first; err != nil {
		t.Errorf("first Shutdown = %v", err)
	}
}

// TestFlushAfterTheWatcherWasReadBefore: a watcher read once before the
// Pool took it over: Flush counts from what the Pool could receive, and
// returns once every value is handled.
func TestFlushAfterTheWatcherWasReadBefore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		publish(t, b, jobs(11, 11))
		_ = b.Flush(context.Background())
		if _, err := w.Next(context.Background()); err != nil {
			t.Fatal(err)
		}
		p := handle.New(w, byKey, func(context.Context, job) error { return nil }, handle.Options{Workers: 2, Logger: quiet})
		defer p.Shutdown(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Flush(ctx); err != nil {
			t.Errorf("Flush = %v (%+v): it waited for the value read before the Pool", err, p.Stats())
		}
	})
}
