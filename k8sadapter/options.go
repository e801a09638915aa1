package k8sadapter

import (
	"context"
	"time"

	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/heraldgo/herald/k8sadapter/internal/pipeline"
)

// Defaults, equal to client-go's where client-go has the same knob.
const (
	// DefaultSleepDuration, 10 s as in client-go, is the pause between two
	// attempts to write an event to a sink (the first pause is a random
	// fraction of it).
	DefaultSleepDuration = pipeline.DefaultSleep
	// DefaultMaxTries, 12 as in client-go, is how many times an event is
	// offered to a sink before it is given up on.
	DefaultMaxTries = pipeline.DefaultMaxTries
	// DefaultQueueLength, 1000, is the capacity of each sink's queue (in
	// events waiting; repeats fold into them), of the queue between the
	// recorders and the handlers, and of each handler's own queue.
	DefaultQueueLength = pipeline.DefaultQueueLength
	// DefaultShutdownTimeout, 10 s, bounds how long Shutdown flushes
	// queued events to the sinks.
	DefaultShutdownTimeout = pipeline.DefaultShutdownTimeout
)

// BroadcasterOption configures NewBroadcaster. The options named as in
// client-go (WithSleepDuration, WithCorrelatorOptions, WithContext) mean what
// they mean there. Options apply in order; the last one wins.
type BroadcasterOption func(*config)

// config is what the options set: the settings both adapters share, and
// core/v1's own.
type config struct {
	pipeline.Config
	correlator record.CorrelatorOptions
	ctx        context.Context
	clock      clock.PassiveClock
}

func defaultConfig() config {
	return config{Config: pipeline.DefaultConfig(), clock: clock.RealClock{}}
}

// WithSleepDuration sets the pause between attempts to write an event to a
// sink. The first pause after a failure is a random fraction of it, so that
// many clients do not retry in step after an apiserver outage. Zero means no
// pause, as in client-go (the one option whose zero is not the default:
// it is client-go's own); negative values are treated as zero.
func WithSleepDuration(d time.Duration) BroadcasterOption {
	return func(c *config) { c.SetSleep(d) }
}

// WithCorrelatorOptions sets the options of the correlator that every sink
// started afterwards gets (each sink has its own). Zero fields take
// client-go's defaults.
func WithCorrelatorOptions(o record.CorrelatorOptions) BroadcasterOption {
	return func(c *config) { c.correlator = o }
}

// WithContext ties the broadcaster to ctx: ctx supplies the logger
// (klog.FromContext), and cancelling it shuts the broadcaster down as
// Shutdown does, flushing queued events within the shutdown timeout.
// Calling Shutdown is then optional.
func WithContext(ctx context.Context) BroadcasterOption {
	return func(c *config) { c.ctx = ctx }
}

// WithClock sets the clock that stamps events and drives correlation and
// the once-per-burst drop log lines, and, if it is a clock.Clock (as
// k8s.io/utils/clock/testing.FakeClock is), the pauses between attempts to
// write to a sink. client-go stamps events with the real clock and offers
// no way to change it. A clock in CorrelatorOptions.Clock takes precedence
// for correlation.
func WithClock(c clock.PassiveClock) BroadcasterOption {
	return func(cfg *config) {
		if c != nil {
			cfg.clock = c
		}
	}
}

// WithMaxTries sets how many times an event is offered to a sink before it
// is given up on (DefaultMaxTries, client-go's fixed 12): 1 is a single
// try. Zero (or less) means the default.
func WithMaxTries(n int) BroadcasterOption {
	return func(c *config) { c.SetMaxTries(n) }
}

// WithQueueLength sets the capacity of the queues (DefaultQueueLength, as
// client-go): each sink's, in events waiting (a repeat of the newest event
// waiting for its object folds into it and takes no place, up to 64 repeats
// an event waiting), and the handlers', in events. A recorder never blocks:
// when a queue is full the event is dropped there, logged and counted. Values
// below 1 mean the default.
func WithQueueLength(n int) BroadcasterOption {
	return func(c *config) { c.SetQueueLength(n) }
}

// WithShutdownTimeout bounds how long Shutdown spends flushing queued
// events to the sinks (DefaultShutdownTimeout). ShutdownContext uses its
// context instead. Zero means the default; a negative value means no flush
// beyond one pass.
func WithShutdownTimeout(d time.Duration) BroadcasterOption {
	return func(c *config) { c.SetShutdownTimeout(d) }
}
