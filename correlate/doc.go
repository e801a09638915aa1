// Package correlate folds floods of events into counts, for events of any
// type: exact repeats are counted instead of recorded again, many similar
// events are combined into one, and a source that keeps repeating itself is
// rate limited. It is client-go's EventCorrelator, generic.
//
// # Usage
//
//	c := correlate.New(func(a Alert) Alert { return a }, correlate.Options[Alert, Alert]{
//		Group: func(a Alert) (group, member Alert) { // same alert, different message
//			return Alert{Service: a.Service, Check: a.Check}, Alert{Message: a.Message}
//		},
//		Spam: func(a Alert) Alert { return Alert{Service: a.Service} },
//	})
//	r, _ := c.Correlate(alert)
//	switch {
//	case r.Skip: // over the service's rate
//	case r.Count > 1: // a repeat: update the earlier record to r.Count
//	default: // new: record r.Event (maybe a group's combined stand-in)
//	}
//
// # Keys
//
// Keys are values of a comparable type K; a struct of the fields that
// matter is the natural choice. Struct keys cannot collide across field
// boundaries, as concatenated strings do.
//
// # Defaults
//
// The zero numbers of Options take client-go's values: caches of 4096
// entries, groups combined at 10 distinct members within 600 s, spam buckets
// of 25 tokens refilled at one per 300 s.
//
// # Concurrency
//
// A Correlator is safe for concurrent use; calls are serialized by one
// lock. It starts no goroutines and reads time only from Options.Clock.
package correlate
