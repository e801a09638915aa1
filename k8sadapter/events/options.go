package events

import (
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/heraldgo/herald/k8sadapter/internal/pipeline"
)

// client-go's timings and sizes.
const (
	// DefaultSleepDuration, 10 s, is the base pause between attempts to
	// write an event; each pause is jittered up to 25 % longer, as in
	// client-go.
	DefaultSleepDuration = pipeline.DefaultSleep
	// FinishTime is how long a series may go unobserved before its final
	// count is written and it is forgotten; also the period of that check.
	FinishTime = 6 * time.Minute
	// RefreshTime is the period at which every open series is written
	// again, so that it does not expire on the server.
	RefreshTime = 30 * time.Minute
	// DefaultMaxTries, 12, is how many times an event is offered to the
	// sink.
	DefaultMaxTries = pipeline.DefaultMaxTries
	// DefaultQueueLength, 1000, is the capacity of the writer's queue, in
	// series waiting (unless the cache size is larger), of the queue
	// between the recorders and the handlers, and of each handler's queue.
	DefaultQueueLength = pipeline.DefaultQueueLength
)

// herald's bounds, where client-go has none.
const (
	// DefaultCacheSize bounds the series cache (client-go's is unbounded).
	DefaultCacheSize = 4096
	// DefaultShutdownTimeout, 10 s, bounds how long Shutdown flushes.
	DefaultShutdownTimeout = pipeline.DefaultShutdownTimeout
)

// Option configures NewBroadcaster.
type Option func(*config)

// config is what the options set: the settings both adapters share, and
// this one's own.
type config struct {
	pipeline.Config
	clock     clock.Clock
	cacheSize int
	logger    *klog.Logger // nil: klog's global logger
}

func defaultConfig() config {
	return config{Config: pipeline.DefaultConfig(), clock: clock.RealClock{}, cacheSize: DefaultCacheSize}
}

// WithSleepDuration sets the base pause between attempts to write an
// event. Zero means no pause, as in the core/v1 adapter's client-go
// option; negative values mean zero.
func WithSleepDuration(d time.Duration) Option { return func(c *config) { c.SetSleep(d) } }

// WithClock sets the clock for event times, event names, series times,
// the finish and refresh passes, retry pauses and the once-per-burst drop
// log lines. client-go uses the real clock for event times and for
// finishing series whatever its recorder's clock.
func WithClock(c clock.Clock) Option {
	return func(cfg *config) {
		if c != nil {
			cfg.clock = c
		}
	}
}

// WithMaxTries sets how many times an event is offered to the sink
// (DefaultMaxTries): 1 is a single try. Zero (or less) means the default.
func WithMaxTries(n int) Option { return func(c *config) { c.SetMaxTries(n) } }

// WithQueueLength sets the capacity of the queues: the writer's, in
// series waiting (repeats of a waiting series fold into it; the capacity
// is never below WithCacheSize), and the handlers', in events. Values
// below 1 mean the default.
func WithQueueLength(n int) Option { return func(c *config) { c.SetQueueLength(n) } }

// WithCacheSize bounds the number of events remembered for series. When
// the cache is full, the least recently seen event is forgotten; an open
// series has its final count written first. Values below 1 mean the
// default.
func WithCacheSize(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.cacheSize = n
		}
	}
}

// WithLogger sets the logger of the broadcaster's own lines (refused and
// dropped events, once per burst; handler panics) and of its recorders
// (unless a recorder is given another with its WithLogger). The default is
// klog's global logger, as in client-go; the writer logs to the logger of
// its recording context.
func WithLogger(logger klog.Logger) Option {
	return func(c *config) { c.logger = &logger }
}

// WithShutdownTimeout bounds how long Shutdown flushes
// (DefaultShutdownTimeout). Zero means the default; a negative value means
// no flush beyond one pass.
func WithShutdownTimeout(d time.Duration) Option { return func(c *config) { c.SetShutdownTimeout(d) } }
