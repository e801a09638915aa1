package natsbridge

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A reader's fence is a change of state, once per turn: it is logged even
// when it comes within a burst of retries on the same log, which are
// counted into one line a second.
func TestFenceLoggedWithinBurst(t *testing.T) {
	var buf bytes.Buffer
	k := newKeeper(nil, "k", nil, "", time.Second, nil, newLimitedLog(slog.New(slog.NewTextHandler(&buf, nil))))
	defer k.g.Stop()
	k.log.warn("natsbridge: durable record not written: retrying")
	k.log.warn("natsbridge: durable record not written: retrying")
	k.mu.Lock()
	k.fenceLocked("lease not renewed in time")
	k.mu.Unlock()
	k.log.flush()
	out := buf.String()
	if !strings.Contains(out, "this reader stops handing out") {
		t.Errorf("the fence was not logged:\n%s", out)
	}
	if n := strings.Count(out, "retrying"); n != 2 { // the first line, and the flushed count's last
		t.Errorf("retry lines: %d, want the first and the flushed count:\n%s", n, out)
	}
	if !strings.Contains(out, "suppressed=1") {
		t.Errorf("the suppressed retry not counted:\n%s", out)
	}
}
