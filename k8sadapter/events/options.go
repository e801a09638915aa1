package events

import (
	"time"

	"k8s.io/utils/clock"
)

// Timings and sizes; those client-go has are client-go's.
const (
	// DefaultSleepDuration is the base pause between attempts to write an
	// event; each pause is jittered up to 25 % longer, as in client-go.
	DefaultSleepDuration = 10 * time.Second
	// DefaultMaxTries is how many times an event is offered to the sink.
	DefaultMaxTries = 12
	// DefaultQueueLength is the capacity of the queue between recorders
	// and watchers, and of each watcher's queue.
	DefaultQueueLength = 1000
	// DefaultCacheSize bounds the series cache (client-go's is unbounded).
	DefaultCacheSize = 4096
	// DefaultShutdownTimeout bounds how long Shutdown flushes.
	DefaultShutdownTimeout = 10 * time.Second
	// FinishTime is how long a series may go unobserved before its final
	// count is written and it is forgotten; also the period of that check.
	FinishTime = 6 * time.Minute
	// RefreshTime is the period at which every open series is written
	// again, so that it does not expire on the server.
	RefreshTime = 30 * time.Minute
)

// Option configures NewBroadcaster.
type Option func(*config)

type config struct {
	sleep           time.Duration
	clock           clock.Clock
	maxTries        int
	queueLength     int
	cacheSize       int
	shutdownTimeout time.Duration
}

func defaultConfig() config {
	return config{
		sleep:           DefaultSleepDuration,
		clock:           clock.RealClock{},
		maxTries:        DefaultMaxTries,
		queueLength:     DefaultQueueLength,
		cacheSize:       DefaultCacheSize,
		shutdownTimeout: DefaultShutdownTimeout,
	}
}

// WithSleepDuration sets the base pause between attempts to write an
// event. Negative values mean zero.
func WithSleepDuration(d time.Duration) Option { return func(c *config) { c.sleep = max(d, 0) } }

// WithClock sets the clock for event times, event names, series times,
// the finish and refresh passes, and retry pauses. client-go uses the real
// clock for event times and for finishing series whatever its recorder's
// clock.
func WithClock(c clock.Clock) Option {
	return func(cfg *config) {
		if c != nil {
			cfg.clock = c
		}
	}
}

// WithMaxTries sets how many times an event is offered to the sink. Values
// below 1 mean 1.
func WithMaxTries(n int) Option { return func(c *config) { c.maxTries = max(n, 1) } }

// WithQueueLength sets the capacity of the queues. Values below 1 mean the
// default.
func WithQueueLength(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.queueLength = n
		}
	}
}

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

// WithShutdownTimeout bounds how long Shutdown flushes. Negative values
// mean zero.
func WithShutdownTimeout(d time.Duration) Option {
	return func(c *config) { c.shutdownTimeout = max(d, 0) }
}
