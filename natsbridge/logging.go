package natsbridge

import (
	"log/slog"
	"sync"
	"time"
)

// limitedLog writes at most one line per interval; lines in between are
// counted, and the count is reported on the next line written. One is kept
// per kind of problem and per watcher or publisher, so that a flood of
// poison messages costs one line a second, not one per message.
type limitedLog struct {
	l *slog.Logger

	mu         sync.Mutex // guards last, suppressed
	last       time.Time  // when the last line was written
	suppressed int        // lines not written since
}

const logInterval = time.Second

func (g *limitedLog) warn(msg string, args ...any) {
	g.mu.Lock()
	now := time.Now()
	if !g.last.IsZero() && now.Sub(g.last) < logInterval {
		g.suppressed++
		g.mu.Unlock()
		return
	}
	g.last = now
	n := g.suppressed
	g.suppressed = 0
	g.mu.Unlock()
	if n > 0 {
		args = append(args, slog.Int("suppressed", n))
	}
	g.l.Warn(msg, args...)
}
