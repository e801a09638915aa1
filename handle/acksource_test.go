package handle_test

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/heraldgo/herald/handle"
)

// ackSource is an AckSource over a channel of deliveries, for the tests of
// what a Pool tells a durable source: which values it marks done, and
// that it stops it. Its dead letters, if keep is set, it keeps itself.
type ackSource struct {
	in   chan handle.Delivery[job]
	keep bool

	mu      sync.Mutex // guards done, dead, stopped
	done    []uint64
	dead    map[uint64]handle.Failure
	stopped bool
}

func newAckSource(keep bool) *ackSource {
	return &ackSource{in: make(chan handle.Delivery[job], 1<<14), keep: keep, dead: map[uint64]handle.Failure{}}
}

func (s *ackSource) Next(ctx context.Context) (job, error) {
	d, err := s.Receive(ctx)
	return d.Value, err
}

func (s *ackSource) Receive(ctx context.Context) (handle.Delivery[job], error) {
	select {
	case d, ok := <-s.in:
		if !ok {
			return d, errors.New("ackSource: closed")
		}
		return d, nil
	case <-ctx.Done():
		return handle.Delivery[job]{}, ctx.Err()
	}
}

func (s *ackSource) Done(seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = append(s.done, seq)
}

func (s *ackSource) DeadLetter(ctx context.Context, seq uint64, f handle.Failure) error {
	if !s.keep {
		return handle.ErrNoDeadLetterSink
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dead[seq] = f
	return nil
}

func (s *ackSource) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	return nil
}

// doneSeqs returns the sequences marked done, sorted.
func (s *ackSource) doneSeqs() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(slices.Values(s.done))
}
