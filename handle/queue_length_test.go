package handle_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/handle"
)

// TestQueueLengthBoundsWhatIsTaken: with every handler held, a Pool takes
// no more than QueueLength values from its source, however many the
// source holds (the reader takes what is queued in batches, never past
// the room it has); once the handlers return, it takes the rest.
func TestQueueLengthBoundsWhatIsTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w, p, release := heldPool(t, func(job) bool { return true }, handle.Options{Workers: 2, QueueLength: 5})
		defer p.Shutdown(context.Background())
		publish(t, b, jobs(200, 50))
		synctest.Wait()
		s := p.Stats()
		checkConserved(t, s)
		if s.Received != 5 || !s.Paused || s.InFlight != 2 || s.Waiting != 3 {
			t.Errorf("with the handlers held: %+v; want 5 received (the QueueLength), 2 in flight, 3 waiting, paused", s)
		}
		if q := w.Backlog().Queued; q != 195 {
			t.Errorf("the source holds %d values, want the 195 not taken", q)
		}
		close(release)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Flush(ctx); err != nil {
			t.Fatalf("Flush once released = %v: the Pool stopped reading with room", err)
		}
		synctest.Wait() // the reader, woken by the last fates, waits for more
		if s := p.Stats(); s.Received != 200 || s.Handled != 200 || s.Paused {
			t.Errorf("once released: %+v; want all 200 handled", s)
		}
	})
}
