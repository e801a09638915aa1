package handle_test

import (
	"context"
	"fmt"
	"hash/maphash"
	"slices"
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
	if err := p.Flush(context.Background()); err != nil { // every value the source held
		b.Fatal(err)
	}
	if h := p.Stats().Handled; h < uint64(n) {
		b.Fatalf("handled %d of %d", h, n)
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
			b.ReportAllocs()
			// In sources of at most emptyChunk values: a watcher's queue
			// holds at most broadcast.MaxQueueLength, fewer than a fast
			// run's b.N. A Pool per chunk costs nothing measurable
			// against a million values.
			for done := 0; done < b.N; {
				n := min(b.N-done, emptyChunk)
				b.StopTimer()
				w := filled(b, jobs(n, 1000))
				b.StartTimer()
				if impl == "herald" {
					runPool(b, w, 16, n, func(job) {})
				} else {
					shardedPool(w, 16, n, func(job) {})
				}
				done += n
			}
			b.StopTimer()
		})
	}
}

// emptyChunk is how many values BenchmarkEmptyHandler's sources hold at
// most.
const emptyChunk = 1 << 20

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

// BenchmarkHotKey: 8 workers, a value offered every 2.5ms (400 a
// second); a hot key carries 10% of them and its handler takes 10 times
// as long (10ms against 1ms), so it keeps less than half a worker busy:
// within one worker's capacity. cold-values/s is the rate at which the
// other keys' values are handled, cold-p99-ms the 99th percentile of their
// time from publish to handled; hot=none is the same run with the hot
// key's slots left empty. hot=over makes the hot key's handler 100ms, past
// one worker's capacity, with a QueueLength of 64: its values pile up, the
// Pool fills and stops reading (pauses), and every key waits behind the
// ordered source, as the package doc says. One op is 1 000 slots.
func BenchmarkHotKey(b *testing.B) {
	const n, rate = 1000, 400
	for _, hot := range []string{"none", "within", "over"} {
		b.Run("hot="+hot, func(b *testing.B) {
			hotCost := map[string]time.Duration{"within": 10 * time.Millisecond, "over": 100 * time.Millisecond}[hot]
			var cold, coldLate []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				cold = cold[:0]
				bc := broadcast.New[timed](broadcast.Options{QueueLength: n})
				w, err := bc.Watch()
				if err != nil {
					b.Fatal(err)
				}
				var mu sync.Mutex
				qlen := 0
				if hot == "over" {
					qlen = 64
				}
				p := handle.New(w, func(v timed) int { return v.Key }, func(_ context.Context, v timed) error {
					if v.Key == 0 {
						time.Sleep(hotCost)
						return nil
					}
					time.Sleep(time.Millisecond)
					mu.Lock()
					cold = append(cold, time.Since(v.At))
					mu.Unlock()
					return nil
				}, handle.Options{Workers: 8, QueueLength: qlen})
				tick := time.NewTicker(time.Second / rate)
				coldN := 0
				for i := range n {
					<-tick.C
					k := 1 + i%1000
					if i%10 == 0 {
						if hotCost == 0 {
							continue // the hot key's slot, empty
						}
						k = 0
					} else {
						coldN++
					}
					if err := bc.Publish(context.Background(), timed{Key: k, At: time.Now()}); err != nil {
						b.Fatal(err)
					}
				}
				tick.Stop()
				for {
					mu.Lock()
					done := len(cold) >= coldN
					mu.Unlock()
					if done {
						break
					}
					time.Sleep(time.Millisecond) // polling the pool's progress
				}
				b.ReportMetric(float64(p.Stats().Pauses), "pauses")
				_ = p.Shutdown(context.Background())
				_ = bc.Shutdown(context.Background())
				coldLate = append(coldLate, cold...)
			}
			b.ReportMetric(float64(len(coldLate))/b.Elapsed().Seconds(), "cold-values/s")
			slices.Sort(coldLate)
			b.ReportMetric(float64(coldLate[len(coldLate)*99/100].Microseconds())/1000, "cold-p99-ms")
		})
	}
}

// timed is a value stamped when it was published.
type timed struct {
	Key int
	At  time.Time
}
