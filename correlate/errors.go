package correlate

import "errors"

// ErrPanic is wrapped by the error Correlate returns when the key function,
// a function of Options or the clock panicked; the error's message includes
// the panic value. The call changed nothing, and the Correlator stays
// usable.
var ErrPanic = errors.New("correlate: key function panicked")
