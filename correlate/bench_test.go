package correlate_test

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkCorrelate measures the three paths of the pipeline on a plain
// struct. The Kubernetes comparison with client-go is in k8sadapter.
func BenchmarkCorrelate(b *testing.B) {
	b.Run("path=repeat", func(b *testing.B) {
		b.ReportAllocs()
		c := newCorrelator(newClock(), nil)
		events := make([]event, 100)
		for i := range events {
			events[i] = base
			events[i].Object = fmt.Sprint("pod-", i)
		}
		i := 0
		for b.Loop() {
			if _, err := c.Correlate(events[i%len(events)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("path=new", func(b *testing.B) {
		b.ReportAllocs()
		clk := newClock()
		c := newCorrelator(clk, nil)
		events := make([]event, 1<<14) // more than the caches hold: always new
		for i := range events {
			events[i] = base
			events[i].Object = fmt.Sprint("pod-", i)
		}
		i := 0
		for b.Loop() {
			if _, err := c.Correlate(events[i%len(events)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
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
