package correlate_test

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkCorrelate measures the three paths of the pipeline on a plain
// struct. The Kubernetes comparison with client-go is in k8sadapter.
func BenchmarkCorrelate(b *testing.B) {
	// The same event about 100 objects: a repeat each time.
	b.Run("path=repeat", func(b *testing.B) { benchEvents(b, objects(100)) })
	// More objects than the caches hold: a new key each time.
	b.Run("path=new", func(b *testing.B) { benchEvents(b, objects(1<<14)) })
	b.Run("path=combine", func(b *testing.B) {
		b.ReportAllocs()
		clk := newClock()
		c := newCorrelator(clk, nil)
		events := similar(100) // one group, always full once 10 were seen
		i := 0
		for b.Loop() {
			clk.Step(time.Millisecond)
			if _, err := c.Correlate(events[i%len(events)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

func objects(n int) []event {
	events := make([]event, n)
	for i := range events {
		events[i] = base
		events[i].Object = fmt.Sprint("pod-", i)
	}
	return events
}

func benchEvents(b *testing.B, events []event) {
	b.ReportAllocs()
	c := newCorrelator(newClock(), nil)
	i := 0
	for b.Loop() {
		if _, err := c.Correlate(events[i%len(events)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
