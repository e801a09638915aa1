package handle

import (
	"context"
	"errors"
	"testing"
	"time"
)

// batchSource hands out the batches sent on its channel (it reads in
// batches, as a broadcast.Watcher does, but has no Backlog).
type batchSource struct{ c chan []int }

func (s *batchSource) Next(ctx context.Context) (int, error) {
	b, err := s.NextBatch(ctx, nil, 1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (s *batchSource) NextBatch(ctx context.Context, dst []int, n int) ([]int, error) {
	select {
	case b := <-s.c:
		return append(dst, b[:min(n, len(b))]...), nil
	case <-ctx.Done():
		return dst, ctx.Err()
	}
}

// TestFlushWaitsForWhatTheReaderIsHandingOn: while the reader hands a
// batch to its shards one at a time (here held at shard 1, whose lock is
// taken), the values it handed to shard 0 are received (counted there,
// and a worker may begin them): a Flush called then waits for them, and
// returns once they are handled.
func TestFlushWaitsForWhatTheReaderIsHandingOn(t *testing.T) {
	src := &batchSource{c: make(chan []int, 1)}
	p := New[int, struct{}](src, nil, func(context.Context, int) error { return nil }, Options{Workers: 2})
	defer p.Shutdown(context.Background())
	s0, s1 := p.shards[0], p.shards[1]
	s1.mu.Lock()
	src.c <- []int{10, 11}                                                   // no key: order 0 to shard 0, order 1 to shard 1
	for received := uint64(0); received == 0; time.Sleep(time.Millisecond) { // a bounded poll: the push reaches shard 1
		s0.mu.Lock()
		received = s0.stats.Received
		s0.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Flush with shard 0's value received and shard 1's not yet = %v, want it to wait (DeadlineExceeded)", err)
	}
	s1.mu.Unlock()
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("Flush once both were handed on = %v", err)
	}
	if s := p.Stats(); s.Received != 2 || s.Handled != 2 {
		t.Errorf("Stats %+v, want both received and handled", s)
	}
}
