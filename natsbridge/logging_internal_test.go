package natsbridge

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// A reader's fence is a change of state, once per turn: it is logged even
// when it comes within a burst of retries on the same log, which are
// counted into one line a second.
func TestFenceLoggedWithinBurst(t *testing.T) {
	var buf bytes.Buffer
	g := newLimitedLog(slog.New(slog.NewTextHandler(&buf, nil)))
	g.warn("natsbridge: durable record not written: retrying")
	g.warn("natsbridge: durable record not written: retrying")
	g.change("natsbridge: durable position lease not renewed in time: this reader stops handing out")
	g.flush()
	out := buf.String()
	if n := strings.Count(out, "retrying"); n != 2 { // the first line, and the flush's "last"
		t.Errorf("retry lines: %d, want the first and the flushed count:\n%s", n, out)
	}
	if !strings.Contains(out, "this reader stops handing out") {
		t.Errorf("the fence was not logged:\n%s", out)
	}
	if !strings.Contains(out, "suppressed=1") {
		t.Errorf("the suppressed retry not counted:\n%s", out)
	}
}
