// Package correlate folds floods of events into counts, for events of any
// type: exact repeats are counted instead of recorded again, many similar
// events are combined into one, and a source that keeps repeating itself is
// rate limited. It is client-go's EventCorrelator, generic.
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
// Each Correlate call groups, counts and filters, in client-go's order (see
// Correlator.Correlate). A value the spam filter skips is still counted, so
// the next recorded repeat carries it. Correlator.Stored feeds back what the
// sink stored.
//
// # Keys
//
// Keys are values of a comparable type K; a struct of the fields that
// matter is the natural choice. Struct keys cannot collide across field
// boundaries, as concatenated strings do. A group key never collides with
// an event key either, even when they are equal values.
//
// # Defaults
//
// The zero numbers of Options take client-go's values: caches of 4096
// entries, groups combined at 10 distinct members within 600 s, spam
// buckets of 25 tokens refilled at one per 300 s.
//
// # Differences from client-go
//
// When a full group must forget a member, client-go picks one at random;
// a Correlator forgets the least recently seen, so results are
// reproducible. A key function that panics makes Correlate return an error
// wrapping ErrPanic instead of crashing. Groups, spam filter and the
// number of a group's members can be configured or turned off.
//
// # Concurrency
//
// A Correlator is safe for concurrent use; calls are serialized by one
// lock. It starts no goroutines and reads time only from Options.Clock.
package correlate
