package handle_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/handle"
)

// TestEveryWorkerIsWokenForWork: the handlers of n values of n keys each
// wait until all n have begun, so they end only if n workers run at once:
// a worker left parked while a key waits, in its shard or another's,
// stalls them all (synctest then reports the bubble blocked). Values come
// at once and one by one, with as many workers as values and with more.
func TestEveryWorkerIsWokenForWork(t *testing.T) {
	for _, c := range []struct {
		workers, n int
		oneByOne   bool
	}{{8, 8, false}, {8, 8, true}, {16, 16, false}, {64, 16, true}, {3, 3, false}, {5, 5, true}} {
		t.Run(fmt.Sprintf("workers=%d/values=%d/onebyone=%v", c.workers, c.n, c.oneByOne), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, w := source(t)
				var wg sync.WaitGroup
				wg.Add(c.n)
				p := handle.New(w, byKey, func(ctx context.Context, j job) error {
					wg.Done()
					wg.Wait()
					return nil
				}, handle.Options{Workers: c.workers, Logger: quiet})
				defer p.Shutdown(context.Background())
				for _, j := range jobs(c.n, c.n) {
					publish(t, b, []job{j})
					if c.oneByOne {
						synctest.Wait()
					}
				}
				if err := b.Flush(context.Background()); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if err := p.Flush(ctx); err != nil {
					t.Fatalf("Flush = %v (%+v): a worker was left parked", err, p.Stats())
				}
				if s := p.Stats(); s.Handled != uint64(c.n) {
					t.Errorf("handled %d of %d (%+v)", s.Handled, c.n, s)
				}
			})
		})
	}
}

// TestAHeldKeyHoldsOnlyItsLane: with one key's handler held, every value
// of every other key is handled, those whose keys share its shard too;
// the held key's values wait behind it, counted.
func TestAHeldKeyHoldsOnlyItsLane(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		release := make(chan struct{})
		p := handle.New(w, byKey, func(ctx context.Context, j job) error {
			if j.Key == 0 {
				<-release
			}
			return nil
		}, handle.Options{Workers: 16, Logger: quiet})
		defer p.Shutdown(context.Background())
		publish(t, b, jobs(1000, 100)) // 10 values of key 0
		synctest.Wait()
		s := p.Stats()
		checkConserved(t, s)
		if s.Handled != 990 || s.InFlight != 1 || s.Waiting != 9 || s.Blocked == nil || s.Blocked.Key != 0 || s.Blocked.Behind != 9 {
			t.Errorf("with key 0 held: %+v, Blocked %+v; want the 990 values of the other keys handled, key 0's first in flight and 9 behind it", s, s.Blocked)
		}
		close(release)
		if err := p.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if s := p.Stats(); s.Handled != 1000 {
			t.Errorf("once released: %+v; want all 1000 handled", s)
		}
	})
}

// TestAHeldHandlerHoldsNoOtherKeyOfItsShard: two workers, no key (a
// value's shard is its receive order modulo the shards), a steady load of
// 1ms handlers; value 1's handler is held. Value 3, of the held value's
// shard, begins within two of the supervisor's ticks (100ms each) and a
// handler's time: the shard is found starved, and the free worker goes
// there, rather than keeping to its own shard until it runs dry (500ms).
func TestAHeldHandlerHoldsNoOtherKeyOfItsShard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		release := make(chan struct{})
		start := time.Now()
		at3 := make(chan time.Duration, 1)
		p := handle.New[job, struct{}](w, nil, func(ctx context.Context, j job) error {
			switch j.ID {
			case 1:
				<-release
			case 3:
				at3 <- time.Since(start)
			}
			time.Sleep(time.Millisecond) // the handler's work
			return nil
		}, handle.Options{Workers: 2, Logger: quiet})
		defer p.Shutdown(context.Background())
		publish(t, b, jobs(1000, 1000))
		d := <-at3
		close(release)
		if d > 250*time.Millisecond {
			t.Errorf("value 3 (no held key) began after %v, with a worker free for it all along", d)
		}
	})
}
