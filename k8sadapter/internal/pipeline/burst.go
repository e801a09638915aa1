package pipeline

import "github.com/heraldgo/herald/internal/burst"

// BurstInterval is how often the drop logs of both adapters let a
// repeated condition be logged (burst.Burst's default): one line per
// burst of events dropped at a full queue, or recorded after shutdown,
// with a count.
const BurstInterval = burst.DefaultInterval
