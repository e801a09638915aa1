package handle_test

import (
	"context"
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
				d, err := p.DeadLetters().Next(context.Background())
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
