package correlate_test

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkCorrelate measures the three paths of the pipeline on a plain
// struct, with client-go's configuration (groups, spam filter, defaults).
// The comparison with client-go itself is in k8sadapter.
func BenchmarkCorrelate(b *testing.B) {
	// The same event about 100 objects: a repeat each time.
	b.Run("path=repeat", func(b *testing.B) { benchEvents(b, objects(100), 0) })
	// More objects than the caches hold: a new key each time.
	b.Run("path=new", func(b *testing.B) { benchEvents(b, objects(1<<14), 0) })
	// 100 messages about one object: the group is full once 10 were seen,
	// and every event after that counts on its combined stand-in.
	b.Run("path=combine", func(b *testing.B) { benchEvents(b, similar(100, base), time.Millisecond) })
}

// BenchmarkCorrelateParallel is path=repeat from every P at once: the cost
// of the Correlator's one lock under contention.
func BenchmarkCorrelateParallel(b *testing.B) {
	b.ReportAllocs()
	events := objects(100)
	c := newCorrelator(newClock(), nil)
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := c.Correlate(events[i%len(events)]); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// objects returns base about n different objects.
func objects(n int) []event {
	events := make([]event, n)
	for i := range events {
		events[i] = base
		events[i].Object = fmt.Sprint("pod-", i)
	}
	return events
}

// benchEvents correlates events round and round, advancing the clock by
// step before each.
func benchEvents(b *testing.B, events []event, step time.Duration) {
	b.ReportAllocs()
	clk := newClock()
	c := newCorrelator(clk, nil)
	i := 0
	for b.Loop() {
		clk.Advance(step)
		if _, err := c.Correlate(events[i%len(events)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
