package broadcast_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/heraldgo/herald/broadcast"
)

// payload is the value fanned out: a pointer, as Kubernetes events are.
type payload struct{ _ int }

func (*payload) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (p *payload) DeepCopyObject() runtime.Object { c := *p; return &c }

var watcherCounts = []int{1, 10, 100}

// BenchmarkFanout measures lossless fan-out: one publisher, n watchers that
// drain as fast as they can, time per published value until every watcher
// has it. herald and apimachinery's watch.Broadcaster run the same workload
// with the same queue lengths (watcher 100, incoming 25); compare them with
//
//	benchstat -col /impl old.txt
//
// The loop counts b.N itself rather than using b.Loop, because the time to
// drain the watchers after the last publish belongs to the measurement.
func BenchmarkFanout(b *testing.B) {
	for _, n := range watcherCounts {
		b.Run(fmt.Sprintf("watchers=%d/impl=apimachinery", n), func(b *testing.B) { benchAnchor(b, n) })
		b.Run(fmt.Sprintf("watchers=%d/impl=herald-events", n), func(b *testing.B) { benchHerald(b, n, readEvents) })
		b.Run(fmt.Sprintf("watchers=%d/impl=herald-all", n), func(b *testing.B) { benchHerald(b, n, readAll) })
	}
}

// A reader reads want values from w; mode is the read mode w is made in.
type reader struct {
	mode broadcast.ReadMode
	read func(w *broadcast.Watcher[*payload], want int, wg *sync.WaitGroup)
}

var (
	readEvents = reader{broadcast.ReadChannel, eventsLoop}
	readAll    = reader{broadcast.ReadQueue, allLoop}
)

func eventsLoop(w *broadcast.Watcher[*payload], want int, wg *sync.WaitGroup) {
	defer wg.Done()
	got := 0
	for range w.Events() {
		if got++; got == want {
			return
		}
	}
}

func allLoop(w *broadcast.Watcher[*payload], want int, wg *sync.WaitGroup) {
	defer wg.Done()
	got := 0
	for range w.All() {
		if got++; got == want {
			return
		}
	}
}

func benchHerald(b *testing.B, n int, r reader) {
	b.ReportAllocs()
	bc := broadcast.New[*payload](broadcast.Options{})
	b.Cleanup(func() { _ = bc.Shutdown(context.Background()) })
	var wg sync.WaitGroup
	ws := make([]*broadcast.Watcher[*payload], n)
	for i := range ws {
		w, err := bc.WatchWith(broadcast.WatchOptions{Read: r.mode})
		if err != nil {
			b.Fatal(err)
		}
		ws[i] = w
		wg.Add(1)
		go r.read(w, b.N, &wg)
	}
	v := &payload{}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if err := bc.Publish(ctx, v); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	b.StopTimer()
	for _, w := range ws {
		w.Stop()
	}
}

func benchAnchor(b *testing.B, n int) {
	b.ReportAllocs()
	m := watch.NewBroadcaster(broadcast.DefaultQueueLength, watch.WaitIfChannelFull)
	b.Cleanup(m.Shutdown)
	var wg sync.WaitGroup
	ws := make([]watch.Interface, n)
	for i := range ws {
		w, err := m.Watch()
		if err != nil {
			b.Fatal(err)
		}
		ws[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := 0
			for range w.ResultChan() {
				if got++; got == b.N {
					return
				}
			}
		}()
	}
	v := &payload{}
	b.ResetTimer()
	for range b.N {
		if err := m.Action(watch.Added, v); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	b.StopTimer()
	for _, w := range ws {
		w.Stop()
	}
}
