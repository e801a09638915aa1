package natsbridge

import (
	"log/slog"
	"sync"
	"time"

	"github.com/heraldgo/herald/natsbridge/internal/burst"
)

// limitedLog writes at most one line per logInterval (burst.Burst): the
// first line of a burst at once; those that follow within the interval
// are counted, and the next line written reports them (suppressed=N).
// flush reports the rest in one line; whoever keeps a limitedLog calls it
// when it ends, so that no count is lost. One is kept per kind of problem
// and per watcher, mirror or publisher, so that a flood of poison messages
// costs one line a second, not one per message. Make one with
// newLimitedLog.
type limitedLog struct {
	l *slog.Logger

	mu   sync.Mutex // guards b, last
	b    burst.Burst
	last string // the message of the latest line not written
}

const logInterval = time.Second

func newLimitedLog(l *slog.Logger) *limitedLog {
	return &limitedLog{l: l, b: burst.Burst{Interval: logInterval}}
}

func (g *limitedLog) warn(msg string, args ...any) {
	g.mu.Lock()
	n, due := g.b.Add(time.Now(), 1)
	if !due {
		g.last = msg
	}
	g.mu.Unlock()
	if !due {
		return
	}
	if n > 1 {
		args = append(args, slog.Uint64("suppressed", n-1))
	}
	g.l.Warn(msg, args...)
}

// change writes a line at once, never suppressed: for a change of state
// that comes at most once per turn of a reader (a fence), which the lines
// of a burst around it must not hide.
func (g *limitedLog) change(msg string, args ...any) {
	g.l.Warn(msg, args...)
}

// flush writes one line with the number of lines suppressed since the
// last one written, and the message of the latest of them, if any was.
func (g *limitedLog) flush() {
	g.mu.Lock()
	n, last := g.b.Rest(), g.last
	g.mu.Unlock()
	if n > 0 {
		g.l.Warn("natsbridge: warnings suppressed", slog.Uint64("suppressed", n), slog.String("last", last))
	}
}
