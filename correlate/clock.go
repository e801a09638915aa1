package correlate

import "time"

// Clock tells a Correlator what time it is. The clocks of
// k8s.io/utils/clock, fake ones included, satisfy it.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
