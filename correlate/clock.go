package correlate

import "time"

// Clock tells a Correlator what time it is. Any clock of k8s.io/utils/clock,
// fake ones included, satisfies it. Correlate reads it once per call, twice
// with a spam filter.
type Clock interface {
	Now() time.Time
}

// systemClock is the Clock of a nil Options.Clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
