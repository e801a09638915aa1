package testlog_test

import (
	"errors"
	"testing"

	"go.uber.org/goleak"

	"github.com/heraldgo/herald/internal/testlog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWith(t *testing.T) {
	var l testlog.Lines
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
