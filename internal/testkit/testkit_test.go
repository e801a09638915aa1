package testkit_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/heraldgo/herald/internal/testkit"
)

func TestWith(t *testing.T) {
	var l testkit.Lines
	log := l.Logger()
	log.Info("Event occurred", "reason", "Started")
	log.Error(errors.New("down"), "Unable to write event", "dropped", 3)
	log.V(5).Info("Server rejected event")
	if got := l.With("Unable"); len(got) != 1 || got[0] != `"msg"="Unable to write event" "error"="down" "dropped"=3` {
		t.Errorf(`With("Unable") = %q, want the error line`, got)
	}
	if got := l.With("event"); len(got) != 2 {
		t.Errorf(`With("event") = %q, want 2 lines, V(5) included`, got)
	}
}

func TestWhileHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		held := make(chan struct{})
		flush := func(ctx context.Context) error {
			select {
			case <-held:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		testkit.WhileHeld(t, flush, func() { close(held) }, "an event")
	})
}
