package correlate

import "time"

// Clock tells a Correlator what time it is; Correlate reads it once per
// call. A fake clock in tests makes windows and refills exact.
type Clock interface {
	Now() time.Time
}

// systemClock is the Clock of a nil Options.Clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
