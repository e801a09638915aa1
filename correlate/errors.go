package correlate

import "errors"

// ErrPanic is wrapped by the error Correlate returns when one of the
// functions of Options, or the key function, panicked. The Correlator
// stays usable.
var ErrPanic = errors.New("correlate: key function panicked")
