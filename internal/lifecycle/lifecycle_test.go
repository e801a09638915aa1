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

func TestShutdownWaitsForGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := lifecycle.New()
		release := make(chan struct{})
		if !g.Add() {
			t.Fatal("Add refused before the shutdown")
		}
		go func() { defer g.Done(); <-release }()
		select {
		case <-g.Stopping():
			t.Fatal("Stopping closed before Begin")
		default:
		}
		if !g.Begin() || g.Begin() {
			t.Fatal("Begin: want true once, then false")
		}
		<-g.Stopping()
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

func TestWaitWithoutGoroutines(t *testing.T) {
	g := lifecycle.New()
	g.Begin()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Wait(ctx); err != nil || g.Aborted() {
		t.Errorf("Wait with nothing running = %v, aborted %v; want nil, false", err, g.Aborted())
	}
}
