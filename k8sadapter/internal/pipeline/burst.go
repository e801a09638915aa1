package pipeline

import "github.com/heraldgo/herald/internal/burst"

// BurstInterval is how often a Burst lets a repeated condition be logged.
const BurstInterval = burst.DefaultInterval

// Burst is the drop-log policy of both adapters (burst.Burst, at
// BurstInterval): one log line per burst of an event dropped at a full
// queue, or recorded after shutdown, with a count.
type Burst = burst.Burst
