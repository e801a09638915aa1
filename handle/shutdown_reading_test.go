package handle_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/handle"
)

// TestShutdownWhileReadingLosesNothing: whatever moment Shutdown comes
// while the reader takes values in batches, with a key function that
// panics for some values (dead-lettered in the middle of a batch), every
// value published is received (counted) or left in the source, the
// counts add up in concurrent snapshots, and the Pool never holds more
// than QueueLength.
func TestShutdownWhileReadingLosesNothing(t *testing.T) {
	const n, qlen = 3000, 100
	for round := range 40 {
		b := broadcast.New[job](broadcast.Options{QueueLength: 1 << 16})
		w, err := b.Watch()
		if err != nil {
			t.Fatal(err)
		}
		publish(t, b, jobs(n, 50))
		if err := b.Flush(context.Background()); err != nil { // all n in the watcher's queue
			t.Fatal(err)
		}
		key := func(j job) int {
			if j.ID%13 == 5 {
				panic("no key")
			}
			return j.Key
		}
		p := handle.New(w, key, func(ctx context.Context, j job) error { return nil },
			handle.Options{Workers: 3, QueueLength: qlen, Window: 150, DeadLetterQueue: n, Logger: quiet})
		stop := snapshots(t, p, func(s handle.Stats[int]) error {
			if held := s.InFlight + s.Waiting + s.Backoff; held > qlen {
				return fmt.Errorf("the Pool holds %d values, QueueLength %d", held, qlen)
			}
			return nil
		})
		for p.Stats().Received < uint64(round*60) { // a bounded poll: the reader goes on
		}
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		stop()
		s := p.Stats()
		checkConserved(t, s)
		if left := w.Backlog().Queued; int(s.Received)+left != n {
			t.Fatalf("round %d: received %d + left in the source %d, published %d (%+v)", round, s.Received, left, n, s)
		}
		_ = b.Shutdown(context.Background())
	}
}
