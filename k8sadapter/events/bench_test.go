package events_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	clientevents "k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

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
			return h, func() int64 { st := h.Stats(); return int64(st.DroppedSinkQueue) }
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

// memorySink stores events.k8s.io events in memory, as a server would
// store their counts, and counts its calls. If release is not nil, every
// call waits until it is closed.
type memorySink struct {
	release          chan struct{}
	mu               sync.Mutex
	counts           map[string]int32 // event name: series count, 1 for a single event
	creates, patches int
}

func newMemorySink(held bool) *memorySink {
	s := &memorySink{counts: map[string]int32{}}
	if held {
		s.release = make(chan struct{})
	}
	return s
}

func (s *memorySink) Create(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	s.wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.creates++
	s.counts[e.Name] = seriesCount(e)
	return e, nil
}

func (s *memorySink) Update(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return e, nil
}

func (s *memorySink) Patch(_ context.Context, e *eventsv1.Event, _ []byte) (*eventsv1.Event, error) {
	s.wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.patches++
	s.counts[e.Name] = seriesCount(e)
	return e, nil
}

func (s *memorySink) wait() {
	if s.release != nil {
		<-s.release
	}
}

func seriesCount(e *eventsv1.Event) int32 {
	if e.Series != nil {
		return e.Series.Count
	}
	return 1
}

// stored returns the sum of the stored counts and the calls made.
func (s *memorySink) stored() (count, creates, patches int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.counts {
		count += int(c)
	}
	return count, s.creates, s.patches
}

// burstSize is the burst of issue 17.
const burstSize = 20_000

// BenchmarkBurst is issue 17's table: Eventf in a tight loop, in bursts
// of 20 000 calls, through client-go's tools/events and herald's, into
// the same in-memory sink, queue lengths at their defaults, a slow
// handler (StartEventWatcher, a millisecond an event) started beside the
// sink. One op is one Eventf call, timed alone; each burst runs on a
// fresh broadcaster, which is then drained and shut down untimed
// (client-go: until its goroutines are gone; herald: Shutdown). Run a
// burst a sample:
//
//	go test -run XXX -bench 'Burst|Eventf' -benchtime 20000x -count 6 ./k8sadapter/events | tee out.txt
//	benchstat -col /impl out.txt
//
// Workloads: "distinct", 20 000 objects, an event each; "repeats", 1 000
// objects, 20 isomorphic events each (interleaved). Metrics per call:
// ns/op and allocs/op the recorder's cost, with the sink's writer and the
// handler competing for the two cores (and what they allocate meanwhile);
// sink-writes/op the creates and patches made; sink-count/op the counts
// the sink holds once the broadcaster is shut down (a series counts its
// count: 1 means no call lost); handler/op the events the slow handler
// got; peak-goroutines the most seen during a burst.
func BenchmarkBurst(b *testing.B) { burst(b, false, true) }

// BenchmarkEventf is the recorder's own cost: BenchmarkBurst with the
// sink held until the burst ends and no handler, so that nothing else
// wants the CPU meanwhile (herald's events wait in the writer's queue,
// folded, or are dropped when it is full; client-go's wait in a goroutine
// each).
func BenchmarkEventf(b *testing.B) { burst(b, true, false) }

func burst(b *testing.B, held, slowHandler bool) {
	klog.SetLogger(logr.Discard()) // the recorders and handlers log to klog's global logger
	b.Cleanup(klog.ClearLogger)
	workloads := []struct {
		name    string
		objects int
	}{{"distinct", burstSize}, {"repeats", burstSize / 20}}
	type run struct {
		recorder clientevents.EventRecorder
		done     func() // drains and shuts down, untimed
	}
	impls := []struct {
		name  string
		start func(s *memorySink, handler func(k8sruntime.Object)) run
	}{
		{"client-go", func(s *memorySink, handler func(k8sruntime.Object)) run {
			baseline := runtime.NumGoroutine()
			ctx, cancel := context.WithCancel(quiet)
			bc := clientevents.NewBroadcaster(s)
			if err := bc.StartRecordingToSinkWithContext(ctx); err != nil {
				b.Fatal(err)
			}
			if handler != nil {
				if _, err := bc.StartEventWatcher(handler); err != nil {
					b.Fatal(err)
				}
			}
			return run{bc.NewRecorder(scheme.Scheme, "bench"), func() {
				// The goroutine of each event ends once its write is done.
				settle(baseline + 8)
				cancel()
				bc.Shutdown()
				settle(baseline) // the handler drains its queue
			}}
		}},
		{"herald", func(s *memorySink, handler func(k8sruntime.Object)) run {
			bc := events.NewBroadcaster(s)
			if err := bc.StartRecordingToSinkWithContext(quiet); err != nil {
				b.Fatal(err)
			}
			if handler != nil {
				if _, err := bc.StartEventWatcher(handler); err != nil {
					b.Fatal(err)
				}
			}
			return run{bc.NewRecorder(scheme.Scheme, "bench"), bc.Shutdown}
		}},
	}
	for _, wl := range workloads {
		pods := make([]*v1.Pod, wl.objects)
		for i := range pods {
			pods[i] = pod(fmt.Sprint("p", i))
		}
		for _, impl := range impls {
			b.Run(fmt.Sprintf("workload=%s/impl=%s", wl.name, impl.name), func(b *testing.B) {
				var calls, count, writes, handled, peak int
				var s *memorySink
				var got atomic.Int64
				var cur run
				begin := func() {
					s, got = newMemorySink(held), atomic.Int64{}
					var handler func(k8sruntime.Object)
					if slowHandler {
						handler = func(k8sruntime.Object) {
							got.Add(1)
							time.Sleep(time.Millisecond)
						}
					}
					cur = impl.start(s, handler)
				}
				end := func() {
					peak = max(peak, runtime.NumGoroutine())
					if held {
						close(s.release)
					}
					cur.done()
					c, creates, patches := s.stored()
					count, writes, handled = count+c, writes+creates+patches, handled+int(got.Load())
				}
				b.StopTimer()
				begin()
				b.StartTimer()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					cur.recorder.Eventf(pods[i%wl.objects], nil, v1.EventTypeWarning, "BackOff", "Restarting", "back-off")
					i++
					if i%500 == 0 {
						peak = max(peak, runtime.NumGoroutine())
					}
					if i%burstSize == 0 {
						b.StopTimer()
						end()
						begin()
						b.StartTimer()
					}
				}
				b.StopTimer()
				calls = i
				end()
				b.ReportMetric(float64(writes)/float64(calls), "sink-writes/op")
				b.ReportMetric(float64(count)/float64(calls), "sink-count/op")
				if slowHandler {
					b.ReportMetric(float64(handled)/float64(calls), "handler/op")
				}
				b.ReportMetric(float64(peak), "peak-goroutines")
			})
		}
	}
}

// settle waits, for at most a minute, until at most n goroutines run.
func settle(n int) {
	deadline := time.Now().Add(time.Minute)
	for runtime.NumGoroutine() > n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}
