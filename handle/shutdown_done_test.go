package handle_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/heraldgo/herald/handle"
)

// slowDone is an AckSource whose Done of one sequence waits until the test
// lets it return, as a durable watcher's Done waits for the server to
// confirm an ack.
type slowDone struct {
	*ackSource
	slow    uint64
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (s *slowDone) Done(seq uint64) {
	if seq == s.slow {
		s.once.Do(func() { close(s.entered) })
		<-s.release
	}
	s.ackSource.Done(seq)
}

// TestShutdownWhileDoneWaits: a Shutdown that comes while a worker tells
// its source a value is done abandons the values behind it with its key;
// the worker, back from Done, handles none of them (nor a zero value in
// their place), and every value has one fate.
func TestShutdownWhileDoneWaits(t *testing.T) {
	src := &slowDone{ackSource: newAckSource(false), slow: 1, entered: make(chan struct{}), release: make(chan struct{})}
	var mu sync.Mutex
	var handled []job
	received := make(chan struct{})
	p := handle.New(src, byKey, func(ctx context.Context, j job) error {
		if j.N == 0 && j.ID == 0 {
			<-received // the key's second value is behind it
		}
		mu.Lock()
		handled = append(handled, j)
		mu.Unlock()
		return nil
	}, handle.Options{Workers: 1, Logger: quiet})
	src.in <- handle.Delivery[job]{Value: job{Key: 7, N: 0, ID: 0}, Seq: 1, Attempt: 1}
	src.in <- handle.Delivery[job]{Value: job{Key: 7, N: 1, ID: 1}, Seq: 2, Attempt: 1}
	for deadline := time.Now().Add(10 * time.Second); p.Stats().Received < 2; {
		if time.Now().After(deadline) {
			t.Fatal("the Pool did not receive both values")
		}
		time.Sleep(time.Millisecond) // a bounded poll of Stats
	}
	close(received)
	<-src.entered
	shut := make(chan error, 1)
	go func() { shut <- p.Shutdown(context.Background()) }()
	for deadline := time.Now().Add(10 * time.Second); p.Stats().Abandoned < 1; {
		if time.Now().After(deadline) {
			t.Fatal("Shutdown did not abandon the value waiting")
		}
		time.Sleep(time.Millisecond) // a bounded poll of Stats
	}
	close(src.release)
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(handled) != 1 || handled[0].ID != 0 {
		t.Errorf("handled %+v, want only the first value: the second was abandoned", handled)
	}
	s := p.Stats()
	checkConserved(t, s)
	if s.Handled != 1 || s.Abandoned != 1 {
		t.Errorf("Stats %+v, want 1 handled, 1 abandoned", s)
	}
}
