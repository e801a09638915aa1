package lifecycle_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/heraldgo/herald/internal/lifecycle"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
