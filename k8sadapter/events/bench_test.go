package events_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/kubernetes/scheme"
	clientevents "k8s.io/client-go/tools/events"

	"github.com/heraldgo/herald/k8sadapter/events"
)

// countingSink stores nothing and counts writes.
type countingSink struct{ n atomic.Int64 }

func (s *countingSink) Create(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	s.n.Add(1)
	return e, nil
}
func (s *countingSink) Update(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return e, nil
}
func (s *countingSink) Patch(_ context.Context, e *eventsv1.Event, _ []byte) (*eventsv1.Event, error) {
	s.n.Add(1)
	return e, nil
}

// BenchmarkRecordToSink: Eventf to an in-memory sink, each event about a
// new object (a create each), for client-go's tools/events and herald's, in
// one run. Reports the peak goroutine count and the heap after the run.
//
//	benchstat -col /impl out.txt
func BenchmarkRecordToSink(b *testing.B) {
	impls := []struct {
		name string
		new  func(s *countingSink) (clientevents.EventBroadcaster, func() int64)
	}{
		{"client-go", func(s *countingSink) (clientevents.EventBroadcaster, func() int64) {
			return clientevents.NewBroadcaster(s), func() int64 { return 0 }
		}},
		{"herald", func(s *countingSink) (clientevents.EventBroadcaster, func() int64) {
			h := events.NewBroadcaster(s)
			return h, func() int64 { st := h.Stats(); return int64(st.DroppedQueueFull + st.DroppedSinkQueue) }
		}},
	}
	for _, impl := range impls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			s := &countingSink{}
			bc, dropped := impl.new(s)
			ctx, cancel := context.WithCancel(quiet)
			if err := bc.StartRecordingToSinkWithContext(ctx); err != nil {
				b.Fatal(err)
			}
			r := bc.NewRecorder(scheme.Scheme, "bench")
			pods := make([]*v1.Pod, 1<<16)
			for i := range pods {
				pods[i] = pod(fmt.Sprint("p", i))
			}
			peak, i := 0, 0
			for b.Loop() {
				r.Eventf(pods[i%len(pods)], nil, v1.EventTypeNormal, "Synced", fmt.Sprint("Sync", i/len(pods)), "synced")
				i++
				if i%500 == 0 {
					peak = max(peak, runtime.NumGoroutine())
					for s.n.Load()+dropped() < int64(i)-500 {
						time.Sleep(10 * time.Microsecond)
					}
				}
			}
			for s.n.Load()+dropped() < int64(i) {
				time.Sleep(10 * time.Microsecond)
			}
			b.StopTimer()
			b.ReportMetric(float64(peak), "peak-goroutines")
			b.ReportMetric(float64(dropped())/float64(i), "drops/op")
			cancel()
			bc.Shutdown()
		})
	}
}
