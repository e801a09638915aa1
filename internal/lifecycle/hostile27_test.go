package lifecycle_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/heraldgo/herald/internal/lifecycle"
)

// TestHostile27ShutdownRacesTheLastGoroutine: a goroutine that ends just
// as the Shutdown's context ends, with concurrent Shutdown calls. Every
// Shutdown returns only after the goroutine ended (joined); one returns
// ctx.Err() only if the group was aborted; a nil return with a live
// goroutine never happens; Stopping is done before any Shutdown returns.
func TestHostile27ShutdownRacesTheLastGoroutine(t *testing.T) {
	for round := range 300 {
		g := lifecycle.New()
		ctx, cancel := context.WithCancel(context.Background())
		var ended sync.WaitGroup
		ended.Add(1)
		finished := make(chan struct{})
		g.Go(func() {
			defer ended.Done()
			<-g.Stopping().Done()
			if round%2 == 0 {
				cancel() // ends as the context ends
			}
			close(finished)
		})
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range errs {
			wg.Go(func() {
				c := context.Background()
				if i == 0 {
					c = ctx
				}
				errs[i] = g.Shutdown(c)
				select {
				case <-finished:
				default:
					t.Errorf("round %d: Shutdown returned before the goroutine ended", round)
				}
				if g.Live() != 0 {
					t.Errorf("round %d: Shutdown returned with %d live", round, g.Live())
				}
			})
		}
		if round%2 == 1 {
			cancel()
		}
		wg.Wait()
		ended.Wait()
		for i, err := range errs {
			switch {
			case err == nil:
			case i == 0 && errors.Is(err, context.Canceled):
				if !g.Aborted() {
					t.Errorf("round %d: Shutdown = Canceled, but the group was not aborted", round)
				}
			default:
				t.Errorf("round %d: Shutdown %d = %v", round, i, err)
			}
		}
		if g.Go(func() {}) {
			t.Fatalf("round %d: Go accepted after Shutdown", round)
		}
		cancel()
	}
}
