package queue_test

import (
	"testing"

	"github.com/heraldgo/herald/internal/queue"
)

// BenchmarkHandOff measures one writer handing values to one reader
// through a queue of 100 under Block, time per value, beside a buffered
// channel of the same length (the anchor):
//
//	benchstat -col /impl bench.txt
//
// The writer puts one value at a time, as a feed does; the reader takes
// them one at a time (take) or in batches (batch).
func BenchmarkHandOff(b *testing.B) {
	b.Run("impl=chan", func(b *testing.B) {
		b.ReportAllocs()
		ch := make(chan *int, 100)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range ch {
			}
		}()
		v := new(int)
		for b.Loop() {
			ch <- v
		}
		close(ch)
		<-done
	})
	b.Run("impl=queue-take", func(b *testing.B) {
		benchQueue(b, func(q *queue.Queue[*int]) {
			for {
				if _, err := q.Take(nil); err != nil {
					return
				}
			}
		})
	})
	b.Run("impl=queue-batch", func(b *testing.B) {
		benchQueue(b, func(q *queue.Queue[*int]) {
			var bt queue.Batch[*int]
			for q.TakeBatch(&bt, nil) == nil {
				for _, ok := bt.Next(); ok; _, ok = bt.Next() {
				}
			}
		})
	})
}

func benchQueue(b *testing.B, read func(q *queue.Queue[*int])) {
	b.ReportAllocs()
	q := queue.New[*int](100, queue.Block, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		read(q)
	}()
	v := new(int)
	for b.Loop() {
		put(q, v)
	}
	q.Close()
	<-done
}
