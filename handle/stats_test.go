package handle_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/handle"
)

// TestConservedInConcurrentSnapshots: Stats taken while values flow, fail,
// wait out retries and are dead-lettered always add up.
func TestConservedInConcurrentSnapshots(t *testing.T) {
	b, w := source(t)
	var n atomic.Int64
	p := handle.New(w, byKey, func(ctx context.Context, j job) error {
		if rand.IntN(4) == 0 {
			return errors.New("fail")
		}
		n.Add(1)
		return nil
	}, handle.Options{Workers: 4, MaxAttempts: 2, RetryMin: time.Microsecond, RetryMax: time.Microsecond, Logger: quiet})
	go func() {
		for range p.DeadLetters().All() {
		}
	}()
	stop := snapshots(t, p, nil)
	publish(t, b, jobs(20000, 100))
	for p.Stats().Received < 20000 {
		time.Sleep(time.Millisecond) // polling the pool's progress
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := stop(); c < 10 {
		t.Errorf("only %d snapshots taken", c)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := p.Stats()
	checkConserved(t, s)
	if s.Handled+s.DeadLettered != 20000 || s.Retries == 0 {
		t.Errorf("Stats %+v", s)
	}
}

// TestBlockedAndPaused: a key whose value is held (a slow handler) is the
// one Stats names as blocked, with how long and how many values behind
// it; values of other keys go on until the Window behind the held value
// is full, and reading pauses (Paused) until it has its fate.
func TestBlockedAndPaused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _, p, release := heldPool(t, func(j job) bool { return j.Key == 7 && j.N == 0 }, handle.Options{Workers: 4, QueueLength: 8, Window: 16})
		defer p.Shutdown(context.Background())
		publish(t, b, []job{{Key: 7, ID: 0}, {Key: 7, N: 1, ID: 1}, {Key: 7, N: 2, ID: 2}})
		publish(t, b, jobs(100, 5)) // keys 0..4
		time.Sleep(3 * time.Second)
		synctest.Wait()
		s := p.Stats()
		if s.Blocked == nil || s.Blocked.Key != 7 || s.Blocked.Behind != 2 || s.Blocked.For != 3*time.Second || s.Blocked.Attempts != 1 {
			t.Errorf("Blocked %+v, want key 7 for 3s, 1 attempt, 2 behind", s.Blocked)
		}
		if !s.Paused || s.Pauses == 0 || s.Received != 16 {
			t.Errorf("Stats %+v, want reading paused with 16 received (the Window)", s)
		}
		close(release)
		for p.Stats().Handled < 103 {
			time.Sleep(time.Millisecond)
		}
		if s := p.Stats(); s.Paused || s.Blocked != nil {
			t.Errorf("after the release: %+v", s)
		}
	})
}
