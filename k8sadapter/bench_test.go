package k8sadapter_test

import (
	"context"
	"fmt"
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	testclocks "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/k8sadapter"
)

// correlator is what both implementations offer.
type correlator interface {
	correlate(*v1.Event) (skip bool, err error)
}

type anchorCorrelator struct{ c *record.EventCorrelator }

func (a anchorCorrelator) correlate(e *v1.Event) (bool, error) {
	r, err := a.c.EventCorrelate(e)
	return r.Skip, err
}

type heraldCorrelator struct{ c *k8sadapter.EventCorrelator }

func (h heraldCorrelator) correlate(e *v1.Event) (bool, error) {
	r, err := h.c.EventCorrelate(e)
	return r.Skip, err
}

var impls = []struct {
	name string
	new  func(clk *testclocks.FakeClock) correlator
}{
	{"client-go", func(clk *testclocks.FakeClock) correlator {
		return anchorCorrelator{record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: clk, BurstSize: noSpam})}
	}},
	{"herald", func(clk *testclocks.FakeClock) correlator {
		return heraldCorrelator{k8sadapter.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: clk, BurstSize: noSpam})}
	}},
	{"floor", func(*testclocks.FakeClock) correlator { return newFloorCorrelator() }},
}

// floorCorrelator is not a correlator: it is the least that one on
// golang-lru, keeping client-go's contract, can do for an event. It hashes
// the key fields once, looks up one entry in each of three simplelru
// caches of client-go's size (the spam filter's, the aggregator's, the
// counts'), adding it on a miss (evicting the oldest when full), and
// copies the event, as client-go returns a copy. It compares, counts,
// stores and patches nothing. herald's distance from it is what
// correlating costs; its own is the work no correlator can skip.
type floorCorrelator struct {
	seed   maphash.Seed
	caches [3]*simplelru.LRU[uint64, struct{}]
	out    *v1.Event
}

func newFloorCorrelator() *floorCorrelator {
	f := &floorCorrelator{seed: maphash.MakeSeed()}
	for i := range f.caches {
		f.caches[i], _ = simplelru.NewLRU[uint64, struct{}](4096, nil)
	}
	return f
}

func (f *floorCorrelator) correlate(e *v1.Event) (bool, error) {
	var h maphash.Hash
	h.SetSeed(f.seed)
	o := &e.InvolvedObject
	for _, s := range [...]string{e.Source.Component, e.Source.Host, o.Kind, o.Namespace, o.Name, o.FieldPath,
		string(o.UID), o.APIVersion, e.Type, e.Reason, e.Message} {
		h.WriteString(s)
	}
	k := h.Sum64()
	for i, c := range f.caches {
		if _, ok := c.Get(k + uint64(i)); !ok {
			c.Add(k+uint64(i), struct{}{})
		}
	}
	cp := *e
	f.out = &cp
	return false, nil
}

func benchEvent(obj, msg string) *v1.Event {
	return &v1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: obj + ".18ea4cfade9b8953", Namespace: "default"},
		InvolvedObject: v1.ObjectReference{
			Kind: "Pod", Namespace: "default", Name: obj, UID: "6f0b2c2e-1f0d-4c1e-9d1a-1a2b3c4d5e6f", APIVersion: "v1",
			FieldPath: "spec.containers{app}",
		},
		Reason: "BackOff", Message: msg, Type: v1.EventTypeWarning,
		Source:         v1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: metav1.NewTime(t0), LastTimestamp: metav1.NewTime(t0), Count: 1,
		ReportingController: "kubelet", ReportingInstance: "node-1",
	}
}

// noSpam is a spam burst no benchmark exhausts: the filter still runs, but
// every event takes the path its benchmark names.
const noSpam = 1 << 30

// BenchmarkEventCorrelate runs client-go's EventCorrelator and herald's on
// the same events in the same run. Compare with
//
//	benchstat -col /impl out.txt
func BenchmarkEventCorrelate(b *testing.B) {
	paths := []struct {
		name   string
		events func(n int) []*v1.Event
	}{
		// The same event about 100 objects, over and over: a patch each.
		{"repeat", func(int) []*v1.Event {
			es := make([]*v1.Event, 100)
			for i := range es {
				es[i] = benchEvent(fmt.Sprint("web-", i), "Back-off restarting failed container")
			}
			return es
		}},
		// A different object each time, more than the caches hold: a
		// create each.
		{"new", func(int) []*v1.Event {
			es := make([]*v1.Event, 1<<14)
			for i := range es {
				es[i] = benchEvent(fmt.Sprint("web-", i), "Back-off restarting failed container")
			}
			return es
		}},
		// Messages that differ on one object: combined, then a patch of
		// the combined event each time.
		{"aggregate", func(int) []*v1.Event {
			es := make([]*v1.Event, 100)
			for i := range es {
				es[i] = benchEvent("web-0", fmt.Sprint("pulling image version ", i))
			}
			return es
		}},
	}
	for _, p := range paths {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("path=%s/impl=%s", p.name, impl.name), func(b *testing.B) {
				b.ReportAllocs()
				clk := testclocks.NewFakeClock(t0)
				c := impl.new(clk)
				es := p.events(b.N)
				i := 0
				for b.Loop() {
					if _, err := c.correlate(es[i%len(es)]); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// BenchmarkCombinedSkipped: a flood of distinct messages about one object
// with the default spam filter, past its burst: every event is combined
// and skipped. A skipped event allocates no result (and no combined event:
// the correlator reuses the one it built).
func BenchmarkCombinedSkipped(b *testing.B) {
	b.ReportAllocs()
	c := k8sadapter.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: testclocks.NewFakeClock(t0)})
	list := make([]*v1.Event, 100)
	for i := range list {
		list[i] = benchEvent("web-0", fmt.Sprint("pulling image version ", i))
	}
	for i := range 200 {
		if _, err := c.EventCorrelate(list[i%len(list)]); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	for b.Loop() {
		r, err := c.EventCorrelate(list[i%len(list)])
		if err != nil || !r.Skip {
			b.Fatalf("EventCorrelate = %+v, %v; want skipped", r, err)
		}
		i++
	}
}

// countingSink stores nothing and counts the events it is asked to store:
// one per create, and per patch the rise of the event's count (a sink
// that folds repeats writes one patch for several events; client-go's
// writes one each). A benchmark waits for it with waitFor, which parks
// the waiting goroutine until the count is reached instead of sleeping: a
// sleep on a busy machine can oversleep by milliseconds, long enough for a
// fast sink to run dry, which measures the machine's scheduler instead of
// the sink.
type countingSink struct {
	n       atomic.Int64
	target  atomic.Int64  // the count a waiter wants
	reached chan struct{} // receives when n reaches target

	mu   sync.Mutex       // guards last
	last map[string]int32 // event name: the count its last patch carried; made on first use
}

func newCountingSink() *countingSink { return &countingSink{reached: make(chan struct{}, 1)} }

func (s *countingSink) count(events int64) {
	if n := s.n.Add(events); n-events < s.target.Load() && n >= s.target.Load() {
		select {
		case s.reached <- struct{}{}:
		default:
		}
	}
}

func (s *countingSink) Create(e *v1.Event) (*v1.Event, error) { s.count(1); return e, nil }
func (s *countingSink) Update(e *v1.Event) (*v1.Event, error) { return e, nil }
func (s *countingSink) Patch(e *v1.Event, _ []byte) (*v1.Event, error) {
	s.mu.Lock()
	if s.last == nil {
		s.last = map[string]int32{}
	}
	prev, ok := s.last[e.Name]
	if !ok {
		prev = 1 // created with a count of 1
	}
	s.last[e.Name] = e.Count
	s.mu.Unlock()
	s.count(int64(e.Count - prev))
	return e, nil
}

// waitFor returns once the sink has stored n events (a folded patch
// stores several), less the events dropped() reports dropped on the way.
func (s *countingSink) waitFor(n int64, dropped func() int64) {
	for s.n.Load()+dropped() < n {
		s.target.Store(n - dropped())
		if s.n.Load()+dropped() >= n {
			return
		}
		select {
		case <-s.reached:
		case <-time.After(time.Millisecond): // a drop meanwhile moved the target
		}
	}
}

// BenchmarkRecordToSink measures the whole path, recorder to an in-memory
// sink, for client-go's broadcaster and herald's: time per recorded event
// until the sink has it. Two workloads: "repeats", 100 objects each
// reporting the same event over and over (a patch each time, what a
// crash-looping workload looks like), and "churn", 1000 objects with 7
// messages each, more distinct events than the caches hold (a create each
// time, the worst case). Both broadcasters shed load the same way (a full
// queue drops); the benchmark paces the recorder so that nothing is dropped,
// and reports drops per event to prove it.
func BenchmarkRecordToSink(b *testing.B) {
	ctx := klog.NewContext(context.Background(), logr.Discard())
	workloads := []struct {
		name    string
		objects int
		msgs    int
	}{{"repeats", 100, 1}, {"churn", 1000, 7}}
	for _, wl := range workloads {
		objs := make([]*v1.Pod, wl.objects)
		for i := range objs {
			objs[i] = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("web-", i), Namespace: "default", UID: "u"}}
		}
		source := v1.EventSource{Component: "bench", Host: "node-1"}
		run := func(b *testing.B, bc record.EventBroadcaster, dropped func() int64) {
			recordToSink(b, bc, source, dropped, func(r record.EventRecorder, i int) {
				r.Eventf(objs[i%len(objs)], v1.EventTypeNormal, "Synced", "synced generation %d", i%wl.msgs)
			})
		}
		b.Run(fmt.Sprintf("workload=%s/impl=client-go", wl.name), func(b *testing.B) {
			bc := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{BurstSize: noSpam}))
			run(b, bc, func() int64 { return 0 })
		})
		b.Run(fmt.Sprintf("workload=%s/impl=herald", wl.name), func(b *testing.B) {
			bc := k8sadapter.NewBroadcaster(k8sadapter.WithContext(ctx), k8sadapter.WithCorrelatorOptions(record.CorrelatorOptions{BurstSize: noSpam}))
			run(b, bc, func() int64 {
				s := bc.Stats()
				return int64(s.DroppedSinkQueue)
			})
		})
	}
}

// recordToSink is the loop of the record-to-sink benchmarks: bc records
// to a counting sink, record makes the i-th call to a recorder of source,
// and the loop waits until the sink has every event (less those dropped()
// reports dropped) before it stops the clock.
func recordToSink(b *testing.B, bc record.EventBroadcaster, source v1.EventSource, dropped func() int64, record func(r record.EventRecorder, i int)) {
	b.ReportAllocs()
	sink := newCountingSink()
	bc.StartRecordingToSink(sink)
	r := bc.NewRecorder(scheme.Scheme, source)
	i := 0
	for b.Loop() {
		record(r, i)
		i++
		if i%500 == 0 {
			// Let the sink keep up, as a controller's pace would; both
			// implementations get the same pause points.
			sink.waitFor(int64(i)-500, dropped)
		}
	}
	sink.waitFor(int64(i), dropped)
	b.ReportMetric(float64(dropped())/float64(i), "drops/op")
	bc.Shutdown()
}

// memorySink stores core/v1 events in memory, as a server would store
// their counts, and counts its calls. If release is not nil, every call
// waits until it is closed.
type memorySink struct {
	release chan struct{}
	mu      sync.Mutex
	counts  map[string]int32 // event name: count
	writes  int
}

func newMemorySink(held bool) *memorySink {
	s := &memorySink{counts: map[string]int32{}}
	if held {
		s.release = make(chan struct{})
	}
	return s
}

func (s *memorySink) Create(e *v1.Event) (*v1.Event, error) { return s.store(e), nil }
func (s *memorySink) Update(e *v1.Event) (*v1.Event, error) { return e, nil }
func (s *memorySink) Patch(e *v1.Event, _ []byte) (*v1.Event, error) {
	return s.store(e), nil
}

func (s *memorySink) store(e *v1.Event) *v1.Event {
	if s.release != nil {
		<-s.release
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	s.counts[e.Name] = e.Count
	return e
}

// stored returns the sum of the stored counts and the writes made.
func (s *memorySink) stored() (count, writes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.counts {
		count += int(c)
	}
	return count, s.writes
}

// burstSize is the burst of issue 17.
const burstSize = 20_000

// BenchmarkBurst is issue 17's table for the core/v1 path: Eventf in a
// tight loop, in bursts of 20 000 calls, through client-go's tools/record
// and herald's, into the same in-memory sink, queue lengths and
// correlator at their defaults, a slow handler (StartEventWatcher, a
// millisecond an event) started beside the sink. One op is one Eventf
// call, timed alone; each burst runs on a fresh broadcaster, which is
// then drained and shut down untimed (client-go: once its sink and
// handler are idle; herald: Shutdown). Run a burst a sample:
//
//	go test -run XXX -bench 'Burst|Eventf' -benchtime 20000x -count 6 ./k8sadapter | tee out.txt
//	benchstat -col /impl out.txt
//
// Workloads: "distinct", 20 000 objects, an event each; "repeats", 1 000
// objects, 20 identical events each (interleaved; within the spam
// filter's burst of 25). Metrics per call: ns/op and allocs/op the
// recorder's cost, with the sink and the handler competing for the two
// cores (and what they allocate meanwhile); sink-writes/op the creates
// and patches made; sink-count/op the counts the sink holds once the
// broadcaster is shut down (1 means no call lost); handler/op the events
// the slow handler got; peak-goroutines the most seen during a burst.
func BenchmarkBurst(b *testing.B) { burst(b, false, true) }

// BenchmarkEventf is the recorder's own cost: BenchmarkBurst with the
// sink held until the burst ends and no handler, so that nothing else
// wants the CPU meanwhile (the events wait in the sink's queue, folded in
// herald's, or are dropped when it is full).
func BenchmarkEventf(b *testing.B) { burst(b, true, false) }

func burst(b *testing.B, held, slowHandler bool) {
	klog.SetLogger(logr.Discard()) // the recorders and handlers log to klog's global logger
	b.Cleanup(klog.ClearLogger)
	ctx := klog.NewContext(context.Background(), logr.Discard())
	workloads := []struct {
		name    string
		objects int
	}{{"distinct", burstSize}, {"repeats", burstSize / 20}}
	type run struct {
		recorder record.EventRecorder
		done     func() // drains and shuts down, untimed
	}
	source := v1.EventSource{Component: "bench", Host: "node-1"}
	impls := []struct {
		name  string
		start func(s *memorySink, handler func(*v1.Event), handled *atomic.Int64) run
	}{
		{"client-go", func(s *memorySink, handler func(*v1.Event), handled *atomic.Int64) run {
			bc := record.NewBroadcaster(record.WithContext(ctx))
			bc.StartRecordingToSink(s)
			if handler != nil {
				bc.StartEventWatcher(handler)
			}
			return run{bc.NewRecorder(scheme.Scheme, source), func() {
				// client-go cannot flush: wait until its sink and handler
				// have been idle a while, then shut down (which drops what
				// is still queued).
				for last := -1; ; {
					_, n := s.stored()
					n += int(handled.Load())
					if n == last {
						break
					}
					last = n
					time.Sleep(20 * time.Millisecond)
				}
				bc.Shutdown()
			}}
		}},
		{"herald", func(s *memorySink, handler func(*v1.Event), _ *atomic.Int64) run {
			bc := k8sadapter.NewBroadcaster(k8sadapter.WithContext(ctx))
			bc.StartRecordingToSink(s)
			if handler != nil {
				bc.StartEventWatcher(handler)
			}
			return run{bc.NewRecorder(scheme.Scheme, source), bc.Shutdown}
		}},
	}
	for _, wl := range workloads {
		pods := make([]*v1.Pod, wl.objects)
		for i := range pods {
			pods[i] = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("p", i), Namespace: "default", UID: "u"}}
		}
		for _, impl := range impls {
			b.Run(fmt.Sprintf("workload=%s/impl=%s", wl.name, impl.name), func(b *testing.B) {
				var calls, count, writes, handled, peak int
				var s *memorySink
				var got atomic.Int64
				var cur run
				begin := func() {
					s, got = newMemorySink(held), atomic.Int64{}
					var handler func(*v1.Event)
					if slowHandler {
						handler = func(*v1.Event) {
							got.Add(1)
							time.Sleep(time.Millisecond)
						}
					}
					cur = impl.start(s, handler, &got)
				}
				end := func() {
					peak = max(peak, runtime.NumGoroutine())
					if held {
						close(s.release)
					}
					cur.done()
					c, w := s.stored()
					count, writes, handled = count+c, writes+w, handled+int(got.Load())
				}
				b.StopTimer()
				begin()
				b.StartTimer()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					cur.recorder.Eventf(pods[i%wl.objects], v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
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

// realisticOptions are the correlator options of the realistic shape: the
// spam filter present but permissive, so that every event takes the path
// its benchmark names and still pays for the filter.
var realisticOptions = record.CorrelatorOptions{QPS: 1e9, BurstSize: 1 << 30}

// realisticMessage is a message of about 50 bytes, as controllers write.
const realisticMessage = "Back-off restarting failed container app in pod %s"

// realisticEvent is an event as a kubelet records it: about a container
// (a FieldPath), from a host, with the reporting controller and instance
// set, and a message of about 50 bytes.
func realisticEvent(obj, msg string) *v1.Event {
	e := benchEvent(obj, msg)
	e.InvolvedObject.FieldPath = "spec.containers{app}"
	e.Source = v1.EventSource{Component: "kubelet", Host: "ip-10-0-12-34.eu-west-1.compute.internal"}
	e.ReportingController, e.ReportingInstance = "kubelet", e.Source.Host
	return e
}

// BenchmarkEventCorrelateRealistic is BenchmarkEventCorrelate on the
// realistic shape: the spam filter present but permissive (QPS 1e9, burst
// 1<<30), a fake clock standing still, 100 objects cycled, events with a
// FieldPath, Source.Host, ReportingController and ReportingInstance and a
// message of about 50 bytes. "repeat" is the same event about each object
// (a patch each); "aggregate" 100 messages about one object (combined,
// then a patch of the combined event each). Compare with
//
//	benchstat -col /impl out.txt
func BenchmarkEventCorrelateRealistic(b *testing.B) {
	paths := []struct {
		name   string
		events func() []*v1.Event
	}{
		{"repeat", func() []*v1.Event {
			es := make([]*v1.Event, 100)
			for i := range es {
				obj := fmt.Sprint("web-", i)
				es[i] = realisticEvent(obj, fmt.Sprintf(realisticMessage, obj))
			}
			return es
		}},
		{"aggregate", func() []*v1.Event {
			es := make([]*v1.Event, 100)
			for i := range es {
				es[i] = realisticEvent("web-0", fmt.Sprintf(realisticMessage, fmt.Sprint("web-0-", i)))
			}
			return es
		}},
	}
	impls := []struct {
		name string
		new  func(o record.CorrelatorOptions) correlator
	}{
		{"client-go", func(o record.CorrelatorOptions) correlator {
			return anchorCorrelator{record.NewEventCorrelatorWithOptions(o)}
		}},
		{"herald", func(o record.CorrelatorOptions) correlator {
			return heraldCorrelator{k8sadapter.NewEventCorrelatorWithOptions(o)}
		}},
	}
	for _, p := range paths {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("path=%s/impl=%s", p.name, impl.name), func(b *testing.B) {
				b.ReportAllocs()
				o := realisticOptions
				o.Clock = testclocks.NewFakeClock(t0)
				c := impl.new(o)
				es := p.events()
				i := 0
				for b.Loop() {
					if skip, err := c.correlate(es[i%len(es)]); err != nil || skip {
						b.Fatalf("correlate = %v, %v; want recorded", skip, err)
					}
					i++
				}
			})
		}
	}
}

// BenchmarkRecordToSinkRealistic is BenchmarkRecordToSink's repeats on
// the realistic shape of BenchmarkEventCorrelateRealistic: 100 container
// references (with a FieldPath) recorded over and over, from a host, with
// the permissive spam filter, into an in-memory sink.
func BenchmarkRecordToSinkRealistic(b *testing.B) {
	ctx := klog.NewContext(context.Background(), logr.Discard())
	refs := make([]*v1.ObjectReference, 100)
	msgs := make([]string, len(refs))
	for i := range refs {
		obj := fmt.Sprint("web-", i)
		refs[i] = &v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: obj,
			UID: "6f0b2c2e-1f0d-4c1e-9d1a-1a2b3c4d5e6f", APIVersion: "v1", FieldPath: "spec.containers{app}"}
		msgs[i] = fmt.Sprintf(realisticMessage, obj)
	}
	source := v1.EventSource{Component: "kubelet", Host: "ip-10-0-12-34.eu-west-1.compute.internal"}
	run := func(b *testing.B, bc record.EventBroadcaster, dropped func() int64) {
		recordToSink(b, bc, source, dropped, func(r record.EventRecorder, i int) {
			r.Event(refs[i%len(refs)], v1.EventTypeWarning, "BackOff", msgs[i%len(refs)])
		})
	}
	b.Run("impl=client-go", func(b *testing.B) {
		run(b, record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(realisticOptions)), func() int64 { return 0 })
	})
	b.Run("impl=herald", func(b *testing.B) {
		bc := k8sadapter.NewBroadcaster(k8sadapter.WithContext(ctx), k8sadapter.WithCorrelatorOptions(realisticOptions))
		run(b, bc, func() int64 {
			s := bc.Stats()
			return int64(s.DroppedSinkQueue)
		})
	})
}
