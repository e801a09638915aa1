package pipeline

import (
	"slices"
	"sync"
)

// Set is the consumers of one kind (the sinks, the handlers): those
// running and the summed tally of those that ended, so that Stats stays
// exact however many have come and gone, in memory that does not grow
// with them. It is safe for concurrent use.
type Set[E Event, C any] struct {
	add func(*C, C) // adds counters

	mu    sync.Mutex // guards live, ended
	live  []*Consumer[E, C]
	ended Tally[C]
}

// NewSet returns an empty Set whose counters add with add.
func NewSet[E Event, C any](add func(*C, C)) *Set[E, C] { return &Set[E, C]{add: add} }

// Sum returns the tally of every consumer the set has had.
func (s *Set[E, C]) Sum() Tally[C] {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.ended
	for _, c := range s.live {
		s.addTally(&t, c.Tally())
	}
	return t
}

func (s *Set[E, C]) addTally(t *Tally[C], o Tally[C]) {
	s.add(&t.Counts, o.Counts)
	t.Queued += o.Queued
	t.Handled += o.Handled
	t.Dropped += o.Dropped
	t.Folded += o.Folded
	t.Abandoned += o.Abandoned
}

// retire moves c from the running consumers to the ended total.
func (s *Set[E, C]) retire(c *Consumer[E, C]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live = slices.DeleteFunc(s.live, func(o *Consumer[E, C]) bool { return o == c })
	s.addTally(&s.ended, c.Tally())
}
