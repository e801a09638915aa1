package pipeline

import (
	"slices"
	"sync"
)

// set is the consumers of one kind (the sinks, the handlers): those
// running and the summed tally of those that ended, so that Stats stays
// exact however many have come and gone, in memory that does not grow
// with them. It is safe for concurrent use.
type set[E Event, C any] struct {
	addCounts func(*C, C)

	mu    sync.Mutex // guards live, ended
	live  []*Consumer[E, C]
	ended Tally[C]
}

// newSet returns an empty set whose counters add with add.
func newSet[E Event, C any](add func(*C, C)) *set[E, C] { return &set[E, C]{addCounts: add} }

// sum returns the tally of every consumer the set has had.
func (s *set[E, C]) sum() Tally[C] {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.ended
	for _, c := range s.live {
		s.addTally(&t, c.Tally())
	}
	return t
}

func (s *set[E, C]) addTally(t *Tally[C], o Tally[C]) {
	s.addCounts(&t.Counts, o.Counts)
	t.Queued += o.Queued
	t.Handled += o.Handled
	t.Dropped += o.Dropped
	t.Folded += o.Folded
	t.Abandoned += o.Abandoned
}

// add makes c one of the live consumers.
func (s *set[E, C]) add(c *Consumer[E, C]) {
	s.mu.Lock()
	s.live = append(s.live, c)
	s.mu.Unlock()
}

// retire moves c from the live consumers to the ended total.
func (s *set[E, C]) retire(c *Consumer[E, C]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live = slices.DeleteFunc(s.live, func(o *Consumer[E, C]) bool { return o == c })
	s.addTally(&s.ended, c.Tally())
}
