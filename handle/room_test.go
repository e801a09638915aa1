package handle_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/handle"
)

// TestReaderWakesForRoomOfOne: handlers of values 0..6 wait for value 8
// of the same source (a request and its reply); the Pool (QueueLength 8)
// holds 7 values that wait, and has room for one: it reads on, and every
// value is handled.
func TestReaderWakesForRoomOfOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		got8 := make(chan struct{})
		publish(t, b, jobs(9, 9))
		p := handle.New(w, byKey, func(ctx context.Context, j job) error {
			switch {
			case j.ID < 7:
				<-got8
			case j.ID == 8:
				close(got8)
			}
			return nil
		}, handle.Options{Workers: 8, QueueLength: 8, Logger: quiet})
		defer p.Shutdown(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Flush(ctx); err != nil {
			t.Errorf("Flush = %v (%+v): the Pool stopped reading with room for the value its handlers wait for", err, p.Stats())
		}
	})
}

// TestRoomOfOneServesOtherKeys: a key whose head waits out its retries
// holds 7 places of 8; another key's values, published after, are read
// into the place left and handled at once, not once the failing key's
// retries run out.
func TestRoomOfOneServesOtherKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		var js []job
		for i := range 7 {
			js = append(js, job{Key: 0, N: i, ID: i})
		}
		for i := 7; i < 10; i++ {
			js = append(js, job{Key: 1, N: i - 7, ID: i})
		}
		publish(t, b, js)
		start := time.Now()
		handled9 := make(chan time.Duration, 1)
		p := handle.New(w, byKey, func(ctx context.Context, j job) error {
			if j.Key == 0 && j.N == 0 {
				return errors.New("key 0 fails")
			}
			if j.ID == 9 {
				handled9 <- time.Since(start)
			}
			return nil
		}, handle.Options{Workers: 2, QueueLength: 8, MaxAttempts: 10, RetryMin: time.Second, RetryMax: time.Minute, Logger: quiet})
		go func() {
			for range p.DeadLetters().All() {
			}
		}()
		defer p.Shutdown(context.Background())
		if d := <-handled9; d > time.Second {
			t.Errorf("value 9 (key 1) handled %v after it was published, with room in the Pool all along (%+v)", d, p.Stats())
		}
	})
}

// TestWindowResumesOnceTheOldestHasItsFate: with values 0 and 1 of one
// key held and the Window (8) full, reading goes on as soon as value 0
// has its fate: the window, counted from value 1, has room.
func TestWindowResumesOnceTheOldestHasItsFate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		release := []chan struct{}{make(chan struct{}), make(chan struct{})}
		p := handle.New(w, byKey, func(ctx context.Context, j job) error {
			if j.ID < 2 {
				<-release[j.ID]
			}
			return nil
		}, handle.Options{Workers: 4, Window: 8, Logger: quiet})
		defer p.Shutdown(context.Background())
		js := []job{{Key: 0, ID: 0}, {Key: 0, N: 1, ID: 1}}
		for i := 2; i < 30; i++ {
			js = append(js, job{Key: i, ID: i})
		}
		publish(t, b, js)
		synctest.Wait()
		if s := p.Stats(); s.Received != 8 || !s.Paused {
			t.Fatalf("with values 0 and 1 held: %+v; want 8 received (the Window), paused", s)
		}
		close(release[0])
		synctest.Wait()
		if s := p.Stats(); s.Received != 9 || !s.Paused {
			t.Errorf("once value 0 has its fate: %+v; want one more received (the Window from value 1), paused again", s)
		}
		close(release[1])
		synctest.Wait()
		if s := p.Stats(); s.Received != 30 || s.Paused {
			t.Errorf("once value 1 has its fate: %+v; want all 30 received", s)
		}
	})
}
