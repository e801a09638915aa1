package handle_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/handle"
)

// TestKeyOrder: with 1, 4 and 64 workers and 1, 10 and 10 000 keys, and
// handlers of random length that fail and panic at random, each value's
// attempts all begin after the last attempt of the value before it with
// its key has ended (so no two values of a key are handled at once, and a
// retry holds its key's place), and every value ends handled or
// dead-lettered.
func TestKeyOrder(t *testing.T) {
	for _, workers := range []int{1, 4, 64} {
		for _, keys := range []int{1, 10, 10000} {
			t.Run(fmt.Sprintf("workers=%d/keys=%d", workers, keys), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { keyOrder(t, workers, keys) })
			})
		}
	}
}

// span is one attempt: when it began and ended, in the order of a clock
// that ticks at every begin and end.
type span struct{ begin, end int }

func keyOrder(t *testing.T, workers, keys int) {
	const n = 3000
	b, w := source(t)
	var (
		mu       sync.Mutex
		clock    int
		attempts = make([][]span, n) // per ID
	)
	rng := rand.New(rand.NewPCG(uint64(workers), uint64(keys)))
	p := handle.New(w, byKey, func(ctx context.Context, j job) error {
		mu.Lock()
		clock++
		i := len(attempts[j.ID])
		attempts[j.ID] = append(attempts[j.ID], span{begin: clock})
		r, d := rng.IntN(100), time.Duration(rng.IntN(3))*time.Millisecond
		mu.Unlock()
		time.Sleep(d) // the handler's work, in the bubble's time
		mu.Lock()
		clock++
		attempts[j.ID][i].end = clock
		mu.Unlock()
		switch {
		case r < 10:
			return errors.New("a failure")
		case r < 13:
			panic("a panic")
		}
		return nil
	}, handle.Options{Workers: workers, MaxAttempts: 3, RetryMin: time.Millisecond, RetryMax: 10 * time.Millisecond, Logger: quiet})
	var dead []handle.DeadLetter[job, int]
	read := make(chan struct{})
	go func() {
		defer close(read)
		for d := range p.DeadLetters().All() {
			dead = append(dead, d)
		}
	}()
	publish(t, b, jobs(n, keys))
	for p.Stats().Received < n {
		time.Sleep(time.Millisecond) // in the bubble: until the pool has read every value
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := p.Stats()
	checkConserved(t, s)
	if s.Handled+s.DeadLettered != n {
		t.Errorf("Handled %d + DeadLettered %d, want %d", s.Handled, s.DeadLettered, n)
	}
	if s.Retries == 0 || s.Panics == 0 {
		t.Errorf("Retries %d, Panics %d: the test failed nothing", s.Retries, s.Panics)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-read
	if uint64(len(dead)) != s.DeadLettered {
		t.Errorf("%d dead letters read, DeadLettered %d", len(dead), s.DeadLettered)
	}
	for _, d := range dead {
		if got := len(attempts[d.Value.ID]); d.Attempts != 3 || got != 3 || d.Key != d.Value.Key || d.Err == nil || d.Last.Before(d.First) {
			t.Errorf("dead letter %+v: want its key, 3 attempts (it had %d), its last error, first <= last", d, got)
		}
	}
	prev := map[int]int{} // per key: the ID of its last value
	errs := 0
	for _, j := range jobs(n, keys) {
		before, ok := prev[j.Key]
		prev[j.Key] = j.ID
		if !ok || errs > 5 {
			continue
		}
		last := attempts[before][len(attempts[before])-1].end
		if first := attempts[j.ID][0].begin; first < last {
			t.Errorf("key %d: value %d began at %d, before value %d's last attempt ended (%d)", j.Key, j.N, first, j.N-1, last)
			errs++
		}
	}
}
