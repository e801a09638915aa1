// Package correlate folds floods of events into counts, for events of any
// type: exact repeats are counted instead of recorded again, many similar
// events are combined into one, and a source that keeps repeating itself is
// rate limited.
//
// # Usage
//
//	c := correlate.New(func(a Alert) Alert { return a }, correlate.Options[Alert, Alert]{
//		Spam: func(a Alert) Alert { return Alert{Service: a.Service} },
//	})
//	r, _ := c.Correlate(alert)
//	switch {
//	case r.Skip: // the service is over its rate: record nothing
//	case r.Count > 1: // a repeat: update the record of r.Previous.Last to r.Count
//	default: // new: record r.Event
//	}
//
// # Pipeline
//
// Each Correlate call groups, counts and filters, in that order (see
// Correlator.Correlate). A value the spam filter skips is still counted, so
// the next recorded repeat carries it. Correlator.Stored feeds back what the
// sink stored. A call whose key function, Options function or clock panics
// returns an error and changes nothing.
//
// # Keys
//
// Keys are values of a comparable type K; a struct of the fields that
// matter is the natural choice. Struct keys cannot collide across field
// boundaries, as concatenated strings do. A group key never collides with
// an event key either, even when they are equal values. Each key is hashed
// once per call.
//
// As in a Go map, a key that is not equal to itself (a NaN float, or a
// struct or array holding one) is never found again: each value with
// such a key is new, never a repeat, and takes a cache entry of its own,
// pushing out the least recently used; such a group key never fills,
// such a member key is a new member every time, and such a spam key gets
// a full bucket every time, so it is never skipped.
//
// # Defaults
//
// The zero numbers of Options take these values: caches of 4096 entries,
// groups combined at 10 distinct members within 600 s, spam buckets of 25
// tokens refilled at one per 300 s. When a full group must forget a member,
// it forgets the one seen longest ago, so results are reproducible.
//
// # Concurrency
//
// A Correlator is safe for concurrent use; calls are serialized by one
// lock. It starts no goroutines and reads time only from Options.Clock.
//
// # Comparison with client-go
//
// This is the algorithm of Kubernetes client-go's EventCorrelator
// (tools/record), for any type: the defaults and the order of the steps
// are its own, and CombinedPrefix is the start of its combined messages.
// Where it forgets a random member of a full group, a Correlator forgets
// the least recently seen; where a panicking key function crashes it, a
// Correlator returns ErrPanic; groups and the spam filter can be turned
// off. Package k8sadapter builds client-go's EventCorrelator on the same
// engine, byte for byte.
package correlate
