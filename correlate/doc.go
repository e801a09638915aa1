// Package correlate folds floods of events into counts, for events of any
// type: exact repeats are counted instead of recorded again, many similar
// events are combined into one, and a source that keeps repeating itself is
// rate limited.
//
// # Usage
//
//	c := correlate.New(func(a Alert) Alert { return a }, correlate.Options[Alert, Alert]{
//		Spam:   func(a Alert) Alert { return Alert{Service: a.Service} },
//		Report: func(s correlate.Summary[Alert, Alert]) { /* s.Count more of s.Event */ },
//	})
//	r, _ := c.Correlate(alert)
//	switch {
//	case r.Skip: // the service is over its rate: record nothing (a Summary will)
//	case r.Count > 1: // a repeat: update the record of r.Previous.Last to r.Count
//	default: // new: record r.Event
//	}
//
// # Pipeline
//
// Each Correlate call groups, counts and filters, in that order (see
// Correlator.Correlate). A value the spam filter skips is still counted, so
// the next recorded repeat carries it (or a Summary reports it).
// Correlator.Stored feeds back what the sink stored. A call whose key
// function, Options function or clock panics returns an error and changes
// nothing.
//
// # Summaries
//
// A value the spam filter skips is counted under its key, and the next
// recorded result of that key carries it in its Count. Once a flood
// stops, no result comes to carry its last skipped values: a Summary
// reports them instead (the key, how many, the first and last time, the
// last value), handed to Options.Report when the application calls
// Flush and when the key is forgotten to make room in the cache. So
// nothing skipped goes unreported, and Stats adds up at every snapshot:
// every value is recorded, carried by a later recorded count, summarized,
// or waiting (Stats.Unreported).
//
// The Correlator owns no goroutine and no timer: the application drives
// the periodic summaries by calling Flush on a ticker of its own (in the
// loop that correlates, say), and calls Flush once more when it stops.
// There is no Shutdown to forget, and a test drives summaries by calling
// Flush. Report runs on the goroutine of the call that made the summary,
// outside the Correlator's lock. It is a callback rather than a herald
// source so that this package imports no broadcaster and starts no
// goroutine; a Report that publishes to a broadcast.Broadcaster makes one.
//
// Package k8sadapter's correlators make no summaries: they keep
// client-go's stored events byte for byte, and client-go has none.
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
// Options.Report runs outside the lock.
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
