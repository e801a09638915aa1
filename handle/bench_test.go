package handle_test

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"testing"
	"time"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/handle"
)

// filled returns a watcher that holds vals, read from its queue: the same
// pre-filled source for herald's Pool and for the hand-written pool.
func filled(b *testing.B, vals []job) *broadcast.Watcher[job] {
	bc := broadcast.New[job](broadcast.Options{QueueLength: len(vals) + 1})
	w, err := bc.Watch()
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range vals {
		if err := bc.Publish(context.Background(), v); err != nil {
			b.Fatal(err)
		}
	}
	if err := bc.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = bc.Shutdown(context.Background()) })
	return w
}

// shardedPool is the anchor: a hand-written key-sharded worker pool, N
// goroutines with a channel each, a value sent to the one its key's hash
// picks. It keeps each key's order, but a slow value holds every key of
// its shard, and it has no retries, dead letters or counts.
func shardedPool(w *broadcast.Watcher[job], workers, n int, fn func(job)) {
	seed := maphash.MakeSeed()
	chans := make([]chan job, workers)
	var wg sync.WaitGroup
	for i := range chans {
		chans[i] = make(chan job, 256)
		wg.Go(func() {
			for v := range chans[i] {
				fn(v)
			}
		})
	}
	ctx := context.Background()
	for range n {
		v, err := w.Next(ctx)
		if err != nil {
			panic(err)
		}
		chans[maphash.Comparable(seed, v.Key)%uint64(workers)] <- v
	}
	for _, c := range chans {
		close(c)
	}
	wg.Wait()
}

// runPool handles n values of w with a Pool and returns once all are
// handled.
func runPool(b *testing.B, w *broadcast.Watcher[job], workers, n int, fn func(job)) {
	p := handle.New(w, byKey, func(_ context.Context, v job) error { fn(v); return nil }, handle.Options{Workers: workers})
	for p.Stats().Handled < uint64(n) {
		time.Sleep(50 * time.Microsecond) // polling the pool's progress, outside the handlers
	}
	if err := p.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkEmptyHandler: the cost per value of the mechanism, a handler
// that does nothing, 1 000 keys, 16 workers, against the hand-written
// key-sharded pool fed the same pre-filled source.
func BenchmarkEmptyHandler(b *testing.B) {
	for _, impl := range []string{"herald", "sharded-pool"} {
		b.Run("impl="+impl, func(b *testing.B) {
			vals := jobs(b.N, 1000)
			w := filled(b, vals)
			b.ReportAllocs()
			b.ResetTimer()
			if impl == "herald" {
				runPool(b, w, 16, b.N, func(job) {})
			} else {
				shardedPool(w, 16, b.N, func(job) {})
			}
			b.StopTimer()
		})
	}
}

// BenchmarkSlowHandler: a handler that takes 1ms, 10 000 values over
// 1 000 keys, with 1 and 16 workers: the handler is the limit, so 16
// workers should go near 16 times as fast. One op is the 10 000 values.
func BenchmarkSlowHandler(b *testing.B) {
	const n = 10000
	for _, workers := range []int{1, 16} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				w := filled(b, jobs(n, 1000))
				b.StartTimer()
				runPool(b, w, workers, n, func(job) { time.Sleep(time.Millisecond) })
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "values/s")
		})
	}
}

// BenchmarkHotKey: 8 workers; a hot key carries 10% of the values and its
// handler takes 10 times as long (1ms against 100µs), within one worker's
// capacity. cold-values/s is the rate of the other keys' values, against
// the same run without the hot key's values. One op is 20 000 values.
func BenchmarkHotKey(b *testing.B) {
	const n = 20000
	for _, hot := range []bool{false, true} {
		b.Run(fmt.Sprintf("hot=%v", hot), func(b *testing.B) {
			var vals []job
			for i := range n {
				k := 1 + i%1000
				if hot && i%10 == 0 {
					k = 0 // the hot key
				}
				vals = append(vals, job{Key: k, ID: i})
			}
			cold := 0
			for _, v := range vals {
				if v.Key != 0 {
					cold++
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				w := filled(b, vals)
				b.StartTimer()
				runPool(b, w, 8, n, func(v job) {
					if v.Key == 0 {
						time.Sleep(time.Millisecond)
					} else {
						time.Sleep(100 * time.Microsecond)
					}
				})
			}
			b.ReportMetric(float64(cold*b.N)/b.Elapsed().Seconds(), "cold-values/s")
		})
	}
}
