package handle

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/heraldgo/herald/broadcast"
)

// TestReceiveTakesWhatIsHeldAsShutdownBegins: with the read ctx ended (a
// Shutdown began), the reader still takes what a broadcast.Watcher holds,
// up to the room, so that it counts those values (abandoned) rather than
// losing them between the take and their placing; it ends only once none
// is held.
func TestReceiveTakesWhatIsHeldAsShutdownBegins(t *testing.T) {
	ctx := context.Background()
	b := broadcast.New[int](broadcast.Options{})
	defer b.Shutdown(ctx)
	w, err := b.Watch()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := range 5 {
		_ = b.Publish(ctx, i)
	}
	_ = b.Flush(ctx)
	ended, cancel := context.WithCancel(ctx)
	cancel()
	p := &Pool[int, int]{src: w, batches: w, readCtx: ended}
	var got [][]int
	for {
		vals, err := p.takeBatch(3)
		if err != nil {
			if len(vals) != 0 || !errors.Is(err, context.Canceled) {
				t.Fatalf("takeBatch with none held = %v, %v; want nothing, context.Canceled", vals, err)
			}
			break
		}
		got = append(got, slices.Clone(vals))
	}
	if want := [][]int{{0, 1, 2}, {3, 4}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("receive with the read ctx ended took %v, want %v", got, want)
	}
}
