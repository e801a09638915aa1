package lifecycle_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
	"k8s.io/utils/clock"

	"github.com/heraldgo/herald/internal/lifecycle"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestShutdownWaitsForGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := lifecycle.New()
		release := make(chan struct{})
		if !g.Add() {
			t.Fatal("Add refused before the shutdown")
		}
		go func() { defer g.Done(); <-release }()
		if !g.Begin() || g.Begin() {
			t.Fatal("Begin: want true once, then false")
		}
		if g.Add() {
			t.Error("Add accepted after Begin")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := g.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) || !g.Aborted() {
			t.Errorf("Wait on a stuck goroutine = %v, aborted %v; want DeadlineExceeded, true", err, g.Aborted())
		}
		close(release)
		if err := g.Wait(context.Background()); err != nil {
			t.Errorf("Wait once it ended = %v", err)
		}
	})
}

func TestPauseEndsWithTheShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := lifecycle.New()
		if !g.Pause(clock.RealClock{}, time.Second) {
			t.Error("Pause before the shutdown returned false")
		}
		done := make(chan bool)
		go func() { done <- g.Pause(clock.RealClock{}, time.Hour) }()
		synctest.Wait()
		start := time.Now()
		g.Begin()
		if <-done || time.Since(start) != 0 {
			t.Error("Pause did not end at once when the shutdown began")
		}
		if g.Pause(clock.RealClock{}, 0) {
			t.Error("Pause(0) during the shutdown returned true")
		}
		if err := g.Wait(context.Background()); err != nil {
			t.Error(err)
		}
	})
}
