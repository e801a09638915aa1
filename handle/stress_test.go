package handle_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldgo/herald/handle"
)

// TestOrderAndCountsUnderLoad: with 1 and 64 workers, one key and 10 000
// keys, a small queue and window, and handlers that fail, panic and fail
// permanently at random, each key's values are handled one at a time and
// in order, every snapshot of Stats adds up, and once flushed every value
// is handled or dead-lettered, each dead letter read once.
func TestOrderAndCountsUnderLoad(t *testing.T) {
	for _, c := range []struct{ workers, keys, n, queue, window int }{
		{1, 1, 3000, 0, 0},
		{64, 1, 3000, 16, 32},
		{1, 10000, 20000, 64, 256},
		{64, 10000, 20000, 0, 0},
		{64, 10000, 20000, 64, 100},
		{3, 10, 20000, 0, 0},     // two shards, one worker owning none
		{17, 1000, 20000, 32, 0}, // sixteen shards
	} {
		t.Run(fmt.Sprintf("workers=%d/keys=%d/queue=%d/window=%d", c.workers, c.keys, c.queue, c.window), func(t *testing.T) {
			b, w := source(t)
			type state struct {
				running bool
				last    int // the N last started, -1 before any
			}
			var mu sync.Mutex
			keys := make([]state, c.keys)
			for i := range keys {
				keys[i].last = -1
			}
			var attempts sync.Map // ID -> *atomic.Int64
			var violations atomic.Int64
			fn := func(ctx context.Context, j job) error {
				mu.Lock()
				k := &keys[j.Key]
				if k.running {
					violations.Add(1)
					t.Errorf("key %d: %d started while another value of its key runs", j.Key, j.N)
				}
				if j.N != k.last && j.N != k.last+1 {
					violations.Add(1)
					t.Errorf("key %d: %d started after %d", j.Key, j.N, k.last)
				}
				k.running, k.last = true, j.N
				mu.Unlock()
				defer func() {
					mu.Lock()
					k.running = false
					mu.Unlock()
				}()
				a, _ := attempts.LoadOrStore(j.ID, new(atomic.Int64))
				try := a.(*atomic.Int64).Add(1)
				h := uint64(j.ID)*2654435761 + uint64(try)*40503
				switch h % 64 {
				case 0:
					panic("boom")
				case 1:
					return handle.Permanent(errors.New("never"))
				case 2, 3, 4, 5, 6, 7:
					return errors.New("not yet")
				}
				return nil
			}
			p := handle.New(w, byKey, fn, handle.Options{
				Workers: c.workers, MaxAttempts: 3, RetryMin: time.Millisecond, RetryMax: 4 * time.Millisecond,
				QueueLength: c.queue, Window: c.window, Logger: quiet,
			})
			var dead atomic.Uint64
			seen := make(map[int]bool)
			readDead := make(chan struct{})
			go func() {
				defer close(readDead)
				for d := range p.DeadLetters().All() {
					if seen[d.Value.ID] {
						t.Errorf("value %d dead-lettered twice", d.Value.ID)
					}
					seen[d.Value.ID] = true
					dead.Add(1)
				}
			}()
			stop := snapshots(t, p, func(s handle.Stats[int]) error {
				if s.InFlight > c.workers+1 || s.InFlight < 0 || s.Waiting < 0 || s.Backoff < 0 {
					return errors.New("out of bounds")
				}
				return nil
			})
			publish(t, b, jobs(c.n, c.keys))
			deadline := time.Now().Add(2 * time.Minute)
			for p.Stats().Received < uint64(c.n) && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := p.Flush(ctx); err != nil {
				t.Fatalf("Flush: %v (%+v)", err, p.Stats())
			}
			stop()
			s := p.Stats()
			checkConserved(t, s)
			if s.Received != uint64(c.n) || s.Handled+s.DeadLettered != uint64(c.n) || s.Abandoned != 0 {
				t.Errorf("after Flush: %+v; want all %d handled or dead-lettered", s, c.n)
			}
			if s.Keys != 0 || s.Blocked != nil {
				t.Errorf("after Flush: %d keys held, Blocked %+v; want none", s.Keys, s.Blocked)
			}
			if err := p.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			<-readDead
			if dead.Load() != s.DeadLettered {
				t.Errorf("read %d dead letters, counted %d", dead.Load(), s.DeadLettered)
			}
		})
	}
}

// TestShutdownUnderLoad: a Shutdown that comes while values pour in, some
// failing and waiting out retries, leaves none waiting, in flight or in
// backoff: each received value is handled, dead-lettered or abandoned,
// Stats adds up, and Flush returns.
func TestShutdownUnderLoad(t *testing.T) {
	for round := range 20 {
		b, w := source(t)
		p := handle.New(w, byKey, func(ctx context.Context, j job) error {
			if j.ID%7 == 0 {
				return errors.New("not yet")
			}
			return nil
		}, handle.Options{Workers: 1 + round%4*8, RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond, QueueLength: 32, Logger: quiet})
		go func() {
			for d := range p.DeadLetters().All() {
				_ = d
			}
		}()
		published := make(chan struct{})
		go func() {
			defer close(published)
			for _, j := range jobs(5000, 50) {
				if b.Publish(context.Background(), j) != nil {
					return
				}
			}
		}()
		for p.Stats().Handled < uint64(100+round*50) {
			time.Sleep(100 * time.Microsecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := p.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		s := p.Stats()
		checkConserved(t, s)
		if s.InFlight != 0 || s.Waiting != 0 || s.Backoff != 0 {
			t.Errorf("round %d: after Shutdown %+v; want nothing held", round, s)
		}
		if err := p.Flush(ctx); err != nil {
			t.Errorf("round %d: Flush after Shutdown = %v", round, err)
		}
		cancel()
		_ = b.Shutdown(context.Background())
		<-published
	}
}
