package handle_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/handle"
)

// TestAHandlerThatCallsGoexitFailsItsValue: a handler that calls
// runtime.Goexit (t.FailNow inside a handler does) fails its value, as a
// panic does: the value is retried, and dead-lettered once it has failed
// MaxAttempts times; its key's later values follow it, in order; and the
// Pool's one worker goes on, on another goroutine.
func TestAHandlerThatCallsGoexitFailsItsValue(t *testing.T) {
	for _, c := range []struct {
		name  string
		exits int // attempts of value 4 that exit
		key0  []int
	}{
		{"once, then handled", 1, []int{0, 2, 4, 6, 8, 10}},
		{"every attempt, dead-lettered", 3, []int{0, 2, 6, 8, 10}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, w := source(t)
				var key0 []int
				exits := 0
				p := handle.New(w, byKey, func(_ context.Context, j job) error {
					if j.ID == 4 && exits < c.exits {
						exits++
						runtime.Goexit()
					}
					if j.Key == 0 {
						key0 = append(key0, j.ID) // one worker: no race
					}
					return nil
				}, handle.Options{Workers: 1, MaxAttempts: 3, RetryMin: time.Millisecond, RetryMax: time.Millisecond, Logger: quiet})
				defer p.Shutdown(context.Background())
				publish(t, b, jobs(12, 2)) // key 0: 0, 2, 4, 6, 8, 10
				_ = b.Flush(context.Background())
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // synctest's time
				defer cancel()
				if err := p.Flush(ctx); err != nil {
					t.Fatalf("Flush = %v: a value has no fate; %+v", err, p.Stats())
				}
				s := p.Stats()
				checkConserved(t, s)
				if want := uint64(12 - 6 + len(c.key0)); s.Handled != want || s.Panics != uint64(c.exits) {
					t.Errorf("Stats %+v: want %d handled, %d Panics (the exits)", s, want, c.exits)
				}
				if !slices.Equal(key0, c.key0) {
					t.Errorf("key 0's values handled in the order %v, want %v", key0, c.key0)
				}
				if s.DeadLettered == 0 {
					return
				}
				d, err := p.DeadLetters().Next(minute(t))
				if err != nil || d.Value.ID != 4 || d.Attempts != 3 || !strings.Contains(d.Err.Error(), "runtime.Goexit") {
					t.Errorf("dead letter %+v, %v: want value 4's, after 3 attempts, its error naming runtime.Goexit", d, err)
				}
			})
		})
	}
}

// TestAHandlerThatCallsGoexitDuringShutdown: a handler that calls
// runtime.Goexit while Shutdown waits for it: its value is counted
// abandoned, and Shutdown returns, every goroutine of the Pool ended.
func TestAHandlerThatCallsGoexitDuringShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		release, begun := make(chan struct{}), make(chan struct{})
		p := handle.New(w, byKey, func(context.Context, job) error {
			close(begun)
			<-release
			runtime.Goexit()
			return nil
		}, handle.Options{Workers: 1, Logger: quiet})
		publish(t, b, jobs(3, 1))
		<-begun
		done := make(chan error, 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // synctest's time
		defer cancel()
		go func() { done <- p.Shutdown(ctx) }()
		synctest.Wait() // Shutdown waits for the handler
		close(release)
		if err := <-done; err != nil {
			t.Errorf("Shutdown = %v: it waited for a worker gone", err)
		}
		s := p.Stats()
		checkConserved(t, s)
		if s.Abandoned != 3 || s.Panics != 1 {
			t.Errorf("Stats %+v: want all 3 abandoned, 1 Panic (the exit)", s)
		}
	})
}

// TestAHandlerThatPanicsThenCallsGoexitIsOneFailure: a handler whose
// deferred cleanup panics after it called runtime.Goexit fails its
// attempt once: one Panic, one attempt, its dead letter's error the
// panic's.
func TestAHandlerThatPanicsThenCallsGoexitIsOneFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		p := handle.New(w, byKey, func(context.Context, job) error {
			defer func() { panic("cleanup failed") }()
			runtime.Goexit()
			return nil
		}, handle.Options{Workers: 1, MaxAttempts: 1, Logger: quiet})
		defer p.Shutdown(context.Background())
		publish(t, b, jobs(1, 1))
		d, err := p.DeadLetters().Next(minute(t))
		if err != nil || d.Attempts != 1 || !strings.Contains(d.Err.Error(), "cleanup failed") {
			t.Fatalf("dead letter %+v, %v: want one attempt, its error the panic's", d, err)
		}
		if s := p.Stats(); s.Panics != 1 {
			t.Errorf("Stats %+v: want 1 Panic for one failed attempt", s)
		}
	})
}

// exitOnWarn is a slog.Handler that calls runtime.Goexit on a warning, as
// a test's logger that calls t.Fatal does.
type exitOnWarn struct{}

func (exitOnWarn) Enabled(context.Context, slog.Level) bool { return true }
func (exitOnWarn) WithAttrs([]slog.Attr) slog.Handler       { return exitOnWarn{} }
func (exitOnWarn) WithGroup(string) slog.Handler            { return exitOnWarn{} }
func (exitOnWarn) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		runtime.Goexit()
	}
	return nil
}

// TestAGoexitLoggedByALoggerThatExits: the warning of a handler's
// runtime.Goexit, logged by a Logger that calls runtime.Goexit too, loses
// no worker: the value is retried and handled.
func TestAGoexitLoggedByALoggerThatExits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		exited := false
		p := handle.New(w, byKey, func(context.Context, job) error {
			if !exited {
				exited = true
				runtime.Goexit()
			}
			return nil
		}, handle.Options{Workers: 1, MaxAttempts: 2, RetryMin: time.Millisecond, RetryMax: time.Millisecond, Logger: slog.New(exitOnWarn{})})
		defer p.Shutdown(context.Background())
		publish(t, b, jobs(4, 2))
		flushWithin(t, b, p)
		if s := p.Stats(); s.Handled != 4 {
			t.Errorf("Stats %+v: want all 4 handled", s)
		}
	})
}

// TestAKeyFunctionThatCallsGoexitDeadLettersItsValue: a key function that
// calls runtime.Goexit (it runs on the Pool's reader), and one whose
// deferred cleanup panics after, dead-letters its value, as one that
// panics does, and the reading goes on: from a broadcast.Watcher, read in
// batches (two such values in the middle of one), and from a plain
// Source, a value at a time.
func TestAKeyFunctionThatCallsGoexitDeadLettersItsValue(t *testing.T) {
	for _, c := range []struct {
		name         string
		plain, panic bool
		err          string
	}{
		{"batches", false, false, "runtime.Goexit"},
		{"batches, then a panic", false, true, "cleanup failed"},
		{"plain Source", true, false, "runtime.Goexit"},
		{"plain Source, then a panic", true, true, "cleanup failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, w := source(t)
				var src handle.Source[job] = w
				if c.plain {
					src = nextOnly{w}
				}
				publish(t, b, jobs(20, 4)) // one batch: 5 and 6 in its middle
				_ = b.Flush(context.Background())
				p := handle.New(src, func(j job) int {
					if j.ID == 5 || j.ID == 6 {
						if c.panic {
							defer func() { panic("cleanup failed") }()
						}
						runtime.Goexit()
					}
					return j.Key
				}, func(context.Context, job) error { return nil }, handle.Options{Workers: 2, Logger: quiet})
				defer p.Shutdown(context.Background())
				later := jobs(10, 4)
				for i := range later {
					later[i].ID += 20
				}
				publish(t, b, later) // read after it too
				flushWithin(t, b, p)
				s := p.Stats()
				checkConserved(t, s)
				if s.Received != 30 || s.Handled != 28 || s.DeadLettered != 2 || p.Err() != nil {
					t.Errorf("Stats %+v, Err %v: want 30 received, 28 handled, 2 dead-lettered, no error", s, p.Err())
				}
				for _, id := range []int{5, 6} {
					d, err := p.DeadLetters().Next(minute(t))
					if err != nil || d.Value.ID != id || !strings.Contains(d.Err.Error(), c.err) {
						t.Errorf("dead letter %+v, %v: want value %d's, its error naming %s", d, err, id, c.err)
					}
				}
			})
		})
	}
}

// nextOnly is a Source read a value at a time.
type nextOnly struct{ w handle.Source[job] }

func (n nextOnly) Next(ctx context.Context) (job, error) { return n.w.Next(ctx) }

// exitingSource is a Source whose Next calls runtime.Goexit.
type exitingSource struct{}

func (exitingSource) Next(context.Context) (job, error) { runtime.Goexit(); return job{}, nil }

// TestASourceWhoseNextCallsGoexitEndsTheReading: the Pool's Err says
// why, and Flush and Shutdown return. (The source is a struct with no
// fields: New takes it, as any value that is not a nil pointer.)
func TestASourceWhoseNextCallsGoexitEndsTheReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := handle.New(handle.Source[job](exitingSource{}), byKey, func(context.Context, job) error { return nil }, handle.Options{Workers: 1, Logger: quiet})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // synctest's time
		defer cancel()
		synctest.Wait() // the reader called Next
		if err := p.Flush(ctx); err != nil {
			t.Errorf("Flush = %v", err)
		}
		if err := p.Err(); err == nil || !strings.Contains(err.Error(), "runtime.Goexit") {
			t.Errorf("Err = %v: want one naming runtime.Goexit", err)
		}
		if err := p.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown = %v", err)
		}
	})
}

// flushWithin flushes b, waits until the Pool has read what it can (a
// plain Source's Flush waits only for what it read), then flushes p,
// failing the test if p's values have no fate within a minute of
// synctest's time.
func flushWithin(t *testing.T, b interface{ Flush(context.Context) error }, p *handle.Pool[job, int]) {
	t.Helper()
	_ = b.Flush(context.Background())
	synctest.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("Flush = %v: a value has no fate; %+v", err, p.Stats())
	}
}

// minute returns a context that ends a minute of synctest's time from
// now, with the test.
func minute(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestAPanicThenAGoexitAreTwoFailures: a handler that panics on its first
// attempt and calls runtime.Goexit on its second fails twice: two Panics,
// and its dead letter names the Goexit, the last failure.
func TestAPanicThenAGoexitAreTwoFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		attempt := 0
		p := handle.New(w, byKey, func(context.Context, job) error {
			attempt++
			if attempt == 1 {
				panic("first")
			}
			runtime.Goexit()
			return nil
		}, handle.Options{Workers: 1, MaxAttempts: 2, RetryMin: time.Millisecond, RetryMax: time.Millisecond, Logger: quiet})
		defer p.Shutdown(context.Background())
		publish(t, b, jobs(1, 1))
		d, err := p.DeadLetters().Next(minute(t))
		if err != nil || d.Attempts != 2 || !strings.Contains(d.Err.Error(), "runtime.Goexit") {
			t.Fatalf("dead letter %+v, %v: want two attempts, its error naming runtime.Goexit", d, err)
		}
		if s := p.Stats(); s.Panics != 2 {
			t.Errorf("Stats %+v: want 2 Panics", s)
		}
	})
}

// lastBatch is a source read in batches whose last batch comes with the
// error that ends it (io.EOF), as a source of a NextBatch method may; it
// says so once: read again, it waits for ctx.
type lastBatch struct{ vals []job }

func (s *lastBatch) Next(ctx context.Context) (job, error) {
	<-ctx.Done()
	return job{}, ctx.Err()
}

func (s *lastBatch) NextBatch(ctx context.Context, dst []job, n int) ([]job, error) {
	if s.vals == nil {
		<-ctx.Done()
		return dst, ctx.Err()
	}
	dst = append(dst, s.vals...)
	s.vals = nil
	return dst, io.EOF
}

// TestAKeyFunctionThatCallsGoexitInALastBatch: a batch that comes with
// its source's end, one of whose keys' function calls runtime.Goexit: every
// value of it gets its fate, and the Pool's Err is the source's end.
func TestAKeyFunctionThatCallsGoexitInALastBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := handle.New(handle.Source[job](&lastBatch{vals: jobs(10, 3)}), func(j job) int {
			if j.ID == 4 {
				runtime.Goexit()
			}
			return j.Key
		}, func(context.Context, job) error { return nil }, handle.Options{Workers: 2, Logger: quiet})
		defer p.Shutdown(context.Background())
		synctest.Wait()
		if err := p.Flush(minute(t)); err != nil {
			t.Fatal(err)
		}
		s := p.Stats()
		checkConserved(t, s)
		if s.Received != 10 || s.Handled != 9 || s.DeadLettered != 1 || !errors.Is(p.Err(), io.EOF) {
			t.Errorf("Stats %+v, Err %v: want 10 received, 9 handled, 1 dead-lettered, Err io.EOF", s, p.Err())
		}
	})
}

// exitingAtStop is a Source whose Next waits for its ctx's end, then
// calls runtime.Goexit: as the Pool stops.
type exitingAtStop struct{}

func (exitingAtStop) Next(ctx context.Context) (job, error) {
	<-ctx.Done()
	runtime.Goexit()
	return job{}, nil
}

// TestASourceThatCallsGoexitAsThePoolStopsIsNoError: Err reports what
// ended the reading before Shutdown, not after.
func TestASourceThatCallsGoexitAsThePoolStopsIsNoError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := handle.New(handle.Source[job](exitingAtStop{}), byKey, func(context.Context, job) error { return nil }, handle.Options{Workers: 1, Logger: quiet})
		synctest.Wait()
		if err := p.Shutdown(minute(t)); err != nil {
			t.Errorf("Shutdown = %v", err)
		}
		if err := p.Err(); err != nil {
			t.Errorf("Err after Shutdown = %v, want nil", err)
		}
	})
}
