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
