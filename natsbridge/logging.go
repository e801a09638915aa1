package natsbridge

import (
	"log/slog"
	"time"

	"github.com/heraldgo/herald/internal/burst"
)

// limitedLog writes at most one line per logInterval (burst.Burst); lines
// in between are counted, and the count is reported on the next line
// written. One is kept per kind of problem and per watcher or publisher,
// so that a flood of poison messages costs one line a second, not one per
// message. Make one with newLimitedLog.
type limitedLog struct {
	l *slog.Logger
	b burst.Burst
}

const logInterval = time.Second

func newLimitedLog(l *slog.Logger) limitedLog {
	return limitedLog{l: l, b: burst.Burst{Interval: logInterval}}
}

func (g *limitedLog) warn(msg string, args ...any) {
	n, due := g.b.Add(time.Now(), 1)
	if !due {
		return
	}
	if n > 1 {
		args = append(args, slog.Uint64("suppressed", n-1))
	}
	g.l.Warn(msg, args...)
}
