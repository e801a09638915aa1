package lifecycle_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/internal/lifecycle"
)

func TestWaitAbortsOnAStuckGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := lifecycle.New()
		release := make(chan struct{})
		if !g.Go(func() { <-release }) {
			t.Fatal("Go refused before the shutdown")
		}
		if g.Stopping().Err() != nil {
			t.Fatal("Stopping done before Stop")
		}
		if !g.Stop() || g.Stop() {
			t.Fatal("Stop: want true once, then false")
		}
		<-g.Stopping().Done()
		if g.Go(func() { t.Error("ran after Stop") }) || g.Add() {
			t.Error("Go or Add accepted after Stop")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := g.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) || !g.Aborted() {
			t.Errorf("Wait on a stuck goroutine = %v, aborted %v; want DeadlineExceeded, true", err, g.Aborted())
		}
		if g.Live() != 1 {
			t.Errorf("Live() = %d, want 1", g.Live())
		}
		close(release)
		if err := g.Wait(context.Background()); err != nil {
			t.Errorf("Wait once it ended = %v", err)
		}
		<-g.Exited()
	})
}

func TestShutdownJoinsAfterTheAbort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := lifecycle.New()
		var abandoned bool
		g.Go(func() {
			select {
			case <-time.After(time.Hour): // work that outlives the deadline
			case <-g.Aborting().Done():
				abandoned = true
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := g.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown = %v, want DeadlineExceeded", err)
		}
		if !abandoned || g.Live() != 0 {
			t.Errorf("after Shutdown: abandoned %v, live %d; want true, 0 (joined)", abandoned, g.Live())
		}
	})
}

func TestShutdownWithoutGoroutines(t *testing.T) {
	g := lifecycle.New()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Shutdown(ctx); err != nil || g.Aborted() {
		t.Errorf("Shutdown with nothing running = %v, aborted %v; want nil, false", err, g.Aborted())
	}
}

// TestShutdownRacesTheLastGoroutine: a goroutine that ends just
// as the Shutdown's context ends, with concurrent Shutdown calls. Every
// Shutdown returns only after the goroutine ended (joined); one returns
// ctx.Err() only if the group was aborted; a nil return with a live
// goroutine never happens; Stopping is done before any Shutdown returns.
func TestShutdownRacesTheLastGoroutine(t *testing.T) {
	for round := range 300 {
		g := lifecycle.New()
		ctx, cancel := context.WithCancel(context.Background())
		var ended sync.WaitGroup
		ended.Add(1)
		finished := make(chan struct{})
		g.Go(func() {
			defer ended.Done()
			<-g.Stopping().Done()
			if round%2 == 0 {
				cancel() // ends as the context ends
			}
			close(finished)
		})
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range errs {
			wg.Go(func() {
				c := context.Background()
				if i == 0 {
					c = ctx
				}
				errs[i] = g.Shutdown(c)
				select {
				case <-finished:
				default:
					t.Errorf("round %d: Shutdown returned before the goroutine ended", round)
				}
				if g.Live() != 0 {
					t.Errorf("round %d: Shutdown returned with %d live", round, g.Live())
				}
			})
		}
		if round%2 == 1 {
			cancel()
		}
		wg.Wait()
		ended.Wait()
		for i, err := range errs {
			switch {
			case err == nil:
			case i == 0 && errors.Is(err, context.Canceled):
				if !g.Aborted() {
					t.Errorf("round %d: Shutdown = Canceled, but the group was not aborted", round)
				}
			default:
				t.Errorf("round %d: Shutdown %d = %v", round, i, err)
			}
		}
		if g.Go(func() {}) {
			t.Fatalf("round %d: Go accepted after Shutdown", round)
		}
		cancel()
	}
}

// TestRelayAfterStopIsWaitedFor: a goroutine that ends by runtime.Goexit
// after the shutdown began relays its work to a new goroutine: the group
// counts it, and has not exited until it ends.
func TestRelayAfterStopIsWaitedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := lifecycle.New()
		exit, release := make(chan struct{}), make(chan struct{})
		relayed := false
		g.Go(func() {
			defer func() { g.Relay(func() { <-release; relayed = true }) }()
			<-exit
			runtime.Goexit()
		})
		g.Stop()
		close(exit)
		synctest.Wait()
		select {
		case <-g.Exited():
			t.Fatal("the group exited while the relayed goroutine runs")
		default:
		}
		if g.Live() != 1 {
			t.Errorf("Live() = %d, want 1: the relayed goroutine", g.Live())
		}
		close(release)
		<-g.Exited()
		if !relayed {
			t.Error("the group exited before the relayed goroutine ended")
		}
	})
}
