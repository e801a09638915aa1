package broadcast_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/heraldgo/herald/broadcast"
)

// nextBatches reads w with NextBatch of at most n until it returns an
// error, and returns what it read, batch by batch, and the error.
func nextBatches[T any](ctx context.Context, w *broadcast.Watcher[T], n int) ([][]T, error) {
	var out [][]T
	for {
		b, err := w.NextBatch(ctx, nil, n)
		if err != nil {
			if len(b) != 0 {
				return out, errors.New("NextBatch appended values along with an error")
			}
			return out, err
		}
		out = append(out, b)
	}
}

// TestNextBatchTakesWhatFitsInOrder: NextBatch hands out the prefix and
// the queued values in order, never more than n at once, leaves the rest
// queued for the next read, hands out queued values in spite of an ended
// ctx, and ends as Next does; on both read modes.
func TestNextBatchTakesWhatFitsInOrder(t *testing.T) {
	for _, mode := range []broadcast.ReadMode{broadcast.ReadQueue, broadcast.ReadChannel} {
		t.Run(mode.String(), func(t *testing.T) {
			b := newB[int](t, broadcast.Options{})
			w, err := b.WatchWith(broadcast.WatchOptions{QueueLength: 16, Read: mode}, -2, -1)
			if err != nil {
				t.Fatal(err)
			}
			publish(t, b, seq(0, 9)...)
			flush(t, b)
			first, err := w.NextBatch(context.Background(), []int{100}, 3)
			if want := []int{100, -2, -1, 0}; err != nil || !slices.Equal(first, want) {
				t.Fatalf("NextBatch(dst [100], 3) = %v, %v; want %v (appended to dst)", first, err, want)
			}
			if v, err := w.Next(context.Background()); v != 1 || err != nil {
				t.Fatalf("Next() after NextBatch = %d, %v; want 1", v, err)
			}
			ended, cancel := context.WithCancel(context.Background())
			cancel()
			got, err := nextBatches(ended, w, 4)
			if want := [][]int{{2, 3, 4, 5}, {6, 7, 8}}; !slices.EqualFunc(got, want, slices.Equal) || !errors.Is(err, context.Canceled) {
				t.Fatalf("NextBatch(ended ctx, 4) read %v, then %v; want %v, then context.Canceled", got, err, want)
			}
			publish(t, b, 9)
			flush(t, b)
			w.Stop()
			got, err = nextBatches(context.Background(), w, 4)
			if !slices.EqualFunc(got, [][]int{{9}}, slices.Equal) || !errors.Is(err, broadcast.ErrClosed) {
				t.Errorf("NextBatch after Stop read %v, then %v; want [[9]], then ErrClosed", got, err)
			}
			if w.Delivered() != 10 || w.Dropped() != 0 {
				t.Errorf("Delivered() = %d, Dropped() = %d; want 10, 0", w.Delivered(), w.Dropped())
			}
		})
	}
}

// TestNextBatchWaitsAndMakesRoom: NextBatch on an empty watcher waits for
// a value, and a full Block watcher's publisher goes on once a batch made
// room.
func TestNextBatchWaitsAndMakesRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := broadcast.New[int](broadcast.Options{QueueLength: 2})
		w, err := b.Watch()
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan []int)
		go func() {
			v, _ := w.NextBatch(context.Background(), nil, 8)
			got <- v
		}()
		synctest.Wait()
		publish(t, b, 1)
		if v := <-got; !slices.Equal(v, []int{1}) {
			t.Errorf("NextBatch on an empty watcher = %v, want [1] once published", v)
		}
		publish(t, b, 2, 3, 4, 5) // 2 and 3 queued, the distributor waits with 4
		synctest.Wait()
		if v, err := w.NextBatch(context.Background(), nil, 8); !slices.Equal(v, []int{2, 3}) || err != nil {
			t.Fatalf("NextBatch of a full watcher = %v, %v; want [2 3]", v, err)
		}
		flush(t, b) // returns only if the batch made room for 4 and 5
		if v, _ := w.NextBatch(context.Background(), nil, 8); !slices.Equal(v, []int{4, 5}) {
			t.Errorf("NextBatch after room was made = %v, want [4 5]", v)
		}
		w.Stop()
		shutdown(t, b)
	})
}

// TestNextBatchPanicsOnBadInput: a nil ctx or an n below 1 is a bug of
// the caller, said at once.
func TestNextBatchPanicsOnBadInput(t *testing.T) {
	b := newB[int](t, broadcast.Options{})
	w := watchT(t, b)
	var nilCtx context.Context
	for name, call := range map[string]func(){
		"nil ctx": func() { _, _ = w.NextBatch(nilCtx, nil, 1) },
		"n 0":     func() { _, _ = w.NextBatch(context.Background(), nil, 0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NextBatch with %s did not panic", name)
				}
			}()
			call()
		}()
	}
}
