package correlate

import (
	"errors"
	"fmt"

	"github.com/heraldgo/herald/internal/correlation"
)

// ErrPanic is wrapped by the error Correlate returns when the key function,
// a function of Options or the clock panicked; the error's message names
// which one and includes the panic value, as in "correlate: panic in
// Options.Combine: ...". The call changed nothing, and the Correlator stays
// usable.
var ErrPanic = errors.New("correlate: panic")

// panicError returns the error of a Correlate call that panicked in p.
func panicError(p *correlation.Panic) error {
	return fmt.Errorf("%w in %s: %v", ErrPanic, funcName(p.Func), p.Value)
}

// funcName names f as the Options and New of this package do.
func funcName(f correlation.Func) string {
	switch f {
	case correlation.FuncClock:
		return "Options.Clock"
	case correlation.FuncKey:
		return "the key function"
	case correlation.FuncGroup, correlation.FuncMember:
		return "Options.Group"
	case correlation.FuncCombine:
		return "Options.Combine"
	case correlation.FuncSpam:
		return "Options.Spam"
	}
	return "a function"
}
