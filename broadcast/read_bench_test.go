package broadcast_test

import (
	"context"
	"testing"

	"github.com/heraldgo/herald/broadcast"
)

// BenchmarkRead measures the cost of taking a value from a queue watcher
// that holds them already, by each read call: Next, one at a time (the
// anchor), NextBatch of 64, and an All loop. One op is one value read;
// filling the queue is not timed.
func BenchmarkRead(b *testing.B) {
	const chunk = 1 << 14
	reads := []struct {
		name string
		read func(w *broadcast.Watcher[int], n int)
	}{
		{"next", func(w *broadcast.Watcher[int], n int) {
			for range n {
				if _, err := w.Next(context.Background()); err != nil {
					panic(err)
				}
			}
		}},
		{"nextbatch", func(w *broadcast.Watcher[int], n int) {
			buf := make([]int, 0, 64)
			for got := 0; got < n; {
				var err error
				if buf, err = w.NextBatch(context.Background(), buf[:0], min(64, n-got)); err != nil {
					panic(err)
				}
				got += len(buf)
			}
		}},
		{"all", func(w *broadcast.Watcher[int], n int) {
			got := 0
			for range w.All() {
				if got++; got == n {
					return
				}
			}
		}},
	}
	for _, r := range reads {
		b.Run("read="+r.name, func(b *testing.B) {
			b.ReportAllocs()
			bc := broadcast.New[int](broadcast.Options{QueueLength: chunk})
			b.Cleanup(func() { _ = bc.Shutdown(context.Background()) })
			w, err := bc.Watch()
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			for done := 0; done < b.N; {
				n := min(b.N-done, chunk)
				for i := range n {
					_ = bc.Publish(context.Background(), i)
				}
				_ = bc.Flush(context.Background())
				b.StartTimer()
				r.read(w, n)
				b.StopTimer()
				done += n
			}
		})
	}
}
