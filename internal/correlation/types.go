package correlation

import "time"

// What a Correlator is given (its clock, its keys) and hands back (its
// results, observations, panics and counts).

// Observation is what a Correlator remembers under one key.
type Observation[L any] struct {
	Count int       // occurrences so far, at most math.MaxInt; zero or below means forgotten
	First time.Time // when the key was first seen
	Last  L         // what Keep kept of the value, or what Stored set
}

// Result is what Correlate decided for one value.
type Result[T, L any] struct {
	Event    T    // the value, or its group's stand-in
	Combined bool // Event is a stand-in, counted under the group's key
	Count    int  // occurrences under that key, this one included
	First    time.Time
	Previous Observation[L] // what was remembered before; zero Count: new
	Skip     bool           // the spam filter refused this occurrence
}

// Func names a function of Options that Correlate runs before it changes
// anything, and that may run the user's code.
type Func int

// The functions Correlate names in a Panic.
const (
	FuncClock   Func = iota + 1 // Clock.Now (either reading)
	FuncKey                     // Key.Hash
	FuncGroup                   // Group.Hash and Group.Match
	FuncMember                  // Member
	FuncCombine                 // Combine
	FuncSpam                    // Spam.Hash
)

// Panic is what Correlate recovered: which function panicked, and with
// what value.
type Panic struct {
	Func  Func
	Value any
}

// Stats counts what a Correlator decided. With Options.Summaries every
// skipped value is Carried (by a later recorded result's count),
// Summarized, or Unreported.
type Stats struct {
	Correlated, New, Repeats, Combined, Skipped, Panics, Evicted uint64
	Carried, Summarized, Summaries, Unreported                   uint64
}

// Clock tells the time.
type Clock interface {
	Now() time.Time
}

// Keyer gives one kind of key of a value in three functions, so that a
// lookup needs the key's hash and a comparison, never the key itself: the
// engine builds a key only to store it.
type Keyer[T, K any] struct {
	// Hash returns the hash of v's key; equal keys must have equal hashes.
	Hash func(v T) uint64
	// Match reports whether k is v's key.
	Match func(v T, k *K) bool
	// Make returns v's key.
	Make func(v T) K
}

// set reports whether the Keyer has its three functions.
func (k *Keyer[T, K]) set() bool { return k.Hash != nil && k.Match != nil && k.Make != nil }
