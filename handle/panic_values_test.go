package handle_test

import (
	"context"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/handle"
)

// exitingString is a panic's value whose String method calls
// runtime.Goexit, as describing it does.
type exitingString struct{}

func (exitingString) String() string { runtime.Goexit(); return "" }

// reentrantBomb is an error whose Error method panics with itself: fmt
// recovers the first panic, and panics again as it prints the value.
type reentrantBomb struct{}

func (reentrantBomb) Error() string { panic(reentrantBomb{}) }

// TestAPanicWhoseValueCallsGoexitLosesNoWorker: a handler panics with a
// value whose String or Error method calls runtime.Goexit as the Pool describes
// the failure; the worker's goroutine ends there, and another goes on
// from the value: it is retried and handled, its panic counted once, and
// the Pool keeps its workers (before, each such panic took one for good:
// Flush waited for ever).
func TestAPanicWhoseValueCallsGoexitLosesNoWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		var panicked atomic.Int32
		p := handle.New(w, byKey, func(ctx context.Context, j job) error {
			if j.ID < 4 && handle.Attempt(ctx) == 1 {
				panicked.Add(1)
				if j.ID%2 == 0 {
					panic(exitingString{})
				}
				panic(exitingError{})
			}
			return nil
		}, handle.Options{Workers: 2, RetryMin: time.Millisecond, RetryMax: time.Millisecond, Logger: quiet})
		defer p.Shutdown(context.Background())
		publish(t, b, jobs(20, 5))
		if err := b.Flush(minute(t)); err != nil {
			t.Fatal(err)
		}
		if err := p.Flush(minute(t)); err != nil {
			t.Fatalf("Flush: %v; Stats %+v", err, p.Stats())
		}
		s := p.Stats()
		checkConserved(t, s)
		if s.Handled != 20 || s.Panics != uint64(panicked.Load()) || s.Panics != 4 {
			t.Errorf("Stats %+v: want 20 handled, 4 Panics", s)
		}
	})
}

// TestAPanicWhosePrintingPanicsIsAFailure: a handler that panics with,
// or returns, a value that panics again as fmt prints it, and a key
// function that panics with one, fail their value, named by its type;
// the process goes on (before, it died: "panic while printing panic
// value").
func TestAPanicWhosePrintingPanicsIsAFailure(t *testing.T) {
	for _, c := range []struct {
		name string
		key  func(job) int
		fn   func(context.Context, job) error
		want string
	}{
		{"handler panics", byKey, func(context.Context, job) error { panic(reentrantBomb{}) }, "reentrantBomb whose Error or String method panics"},
		{"handler returns it", byKey, func(context.Context, job) error { return reentrantBomb{} }, "panics when read: a handle_test.reentrantBomb"},
		{"key function panics", func(job) int { panic(reentrantBomb{}) }, func(context.Context, job) error { return nil }, "reentrantBomb whose Error or String method panics"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, w := source(t)
				p := handle.New(w, c.key, c.fn, handle.Options{Workers: 1, MaxAttempts: 1, Logger: quiet})
				defer p.Shutdown(context.Background())
				publish(t, b, jobs(1, 1))
				d, err := p.DeadLetters().Next(minute(t))
				if err != nil || !strings.Contains(d.Err.Error(), c.want) {
					t.Fatalf("dead letter %+v, %v: want its error to say %q", d, err, c.want)
				}
			})
		})
	}
}

// TestAHandlerThatAlwaysPanicsStartsNoGoroutine: a worker goes on after
// its handler's panic on the goroutine it has: a handler that panics on
// every value starts none (before, each panic started one, and the ones
// ending queued on the panic log's lock: 50 at once with one worker).
func TestAHandlerThatAlwaysPanicsStartsNoGoroutine(t *testing.T) {
	b, w := source(t)
	p := handle.New[job, int](w, nil, func(context.Context, job) error { panic("always") },
		handle.Options{Workers: 1, MaxAttempts: 1, Logger: quiet})
	defer p.Shutdown(context.Background())
	const n = 20000
	dead := p.DeadLetters()
	read := make(chan error, 1)
	go func() {
		for range n {
			if _, err := dead.Next(context.Background()); err != nil {
				read <- err
				return
			}
		}
		read <- nil
	}()
	before := goroutinesCreated()
	publish(t, b, make([]job, n))
	if err := b.Flush(minute(t)); err != nil { // every value in the Pool's source: Flush waits for all
		t.Fatal(err)
	}
	if err := p.Flush(minute(t)); err != nil {
		t.Fatal(err)
	}
	made := goroutinesCreated() - before
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Panics != n || s.DeadLettered != n {
		t.Fatalf("Stats %+v: want %d panics, dead-lettered", s, n)
	}
	if made > 10 { // the runtime's own, if any
		t.Errorf("%d goroutines started while the handler panicked %d times, want none", made, n)
	}
}

// goroutinesCreated returns how many goroutines the process has started.
func goroutinesCreated() uint64 {
	m := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(m)
	return m[0].Value.Uint64()
}

// exitingError is a panic's value whose Error method calls
// runtime.Goexit.
type exitingError struct{}

func (exitingError) Error() string { runtime.Goexit(); return "" }

// TestAKeyPanicWhoseValueCallsGoexitLosesNoValue: a key function panics
// with a value whose Error method calls runtime.Goexit as the Pool
// describes it, on the reader's goroutine: another reader goes on with the
// rest of the batch, every value is received and gets its fate, the
// panicking one a dead letter (before, the batch was never received and
// reading ended), its dead letter naming the panic by its value's type.
func TestAKeyPanicWhoseValueCallsGoexitLosesNoValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		publish(t, b, jobs(10, 2))
		if err := b.Flush(minute(t)); err != nil {
			t.Fatal(err)
		}
		p := handle.New(w, func(j job) int {
			if j.ID == 4 {
				panic(exitingError{})
			}
			return j.Key
		}, func(context.Context, job) error { return nil }, handle.Options{Workers: 1, Logger: quiet})
		defer p.Shutdown(context.Background())
		if err := p.Flush(minute(t)); err != nil {
			t.Fatal(err)
		}
		s := p.Stats()
		checkConserved(t, s)
		if s.Received != 10 || s.Handled != 9 || s.DeadLettered != 1 || p.Err() != nil {
			t.Errorf("Stats %+v, Err %v: want 10 received, 9 handled, 1 dead-lettered, no error", s, p.Err())
		}
		d, err := p.DeadLetters().Next(minute(t))
		if want := "key function panicked with a handle_test.exitingError"; err != nil || !strings.Contains(d.Err.Error(), want) {
			t.Errorf("dead letter %+v, %v: want its error to say %q", d, err, want)
		}
	})
}
