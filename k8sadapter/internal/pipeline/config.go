package pipeline

import "time"

// The defaults both adapters document, client-go's where it has the knob.
const (
	DefaultSleep           = 10 * time.Second
	DefaultMaxTries        = 12
	DefaultQueueLength     = 1000
	DefaultShutdownTimeout = 10 * time.Second
)

// Config holds the settings both adapters have. Its setters normalise
// values as both adapters document.
type Config struct {
	Sleep           time.Duration // base pause between attempts
	MaxTries        int           // attempts per event
	QueueLength     int           // Options.QueueLength
	ShutdownTimeout time.Duration // how long Shutdown flushes
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Sleep: DefaultSleep, MaxTries: DefaultMaxTries, QueueLength: DefaultQueueLength, ShutdownTimeout: DefaultShutdownTimeout}
}

// SetSleep sets Sleep; negative values mean zero.
func (c *Config) SetSleep(d time.Duration) { c.Sleep = max(d, 0) }

// SetMaxTries sets MaxTries; values below 1 keep the current one (the
// default): zero means the default, as everywhere in herald.
func (c *Config) SetMaxTries(n int) {
	if n > 0 {
		c.MaxTries = n
	}
}

// SetQueueLength sets QueueLength; values below 1 keep the current one.
func (c *Config) SetQueueLength(n int) {
	if n > 0 {
		c.QueueLength = n
	}
}

// SetShutdownTimeout sets ShutdownTimeout: zero keeps the current one (the
// default); a negative value means none, one pass and no flush.
func (c *Config) SetShutdownTimeout(d time.Duration) {
	if d != 0 {
		c.ShutdownTimeout = max(d, 0)
	}
}
