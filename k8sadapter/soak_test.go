package k8sadapter_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/heraldgo/herald/k8sadapter"
)

var soak = flag.Duration("soak", 0, "run TestSoak for this long (for example -soak=10m); not run in CI")

// TestSoak records events from 4 goroutines into a healthy and a faulty
// sink for -soak, and reports goroutines and heap every 10 s. At the end
// every event must be accounted for and the goroutine count back where it
// started.
//
//	go test -run TestSoak -soak=10m -v ./k8sadapter
func TestSoak(t *testing.T) {
	if *soak == 0 {
		t.Skip("run with -soak=DURATION")
	}
	baseline := runtime.NumGoroutine()
	faulty := &faultySink{rng: rand.New(rand.NewPCG(3, 4)), hangAt: -1, faults: map[string]int{}}
	e := k8sadapter.NewBroadcaster(quiet, k8sadapter.WithSleepDuration(20*time.Millisecond), k8sadapter.WithMaxTries(3))
	fw := e.StartRecordingToSink(faulty).(*k8sadapter.Handle)
	hw := e.StartRecordingToSink(&countingSink{}).(*k8sadapter.Handle)
	r := recorder(e)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for !stop.Load() {
				r.Eventf(pod(fmt.Sprint("p", rng.IntN(5000))), v1.EventTypeNormal, fmt.Sprint("R", rng.IntN(4)), "message %d", rng.IntN(20))
				if rng.IntN(64) == 0 {
					time.Sleep(time.Millisecond) // a controller's pace, not a tight loop
				}
			}
		})
	}
	var ms runtime.MemStats
	end := time.Now().Add(*soak)
	for time.Now().Before(end) {
		time.Sleep(min(10*time.Second, time.Until(end)))
		runtime.ReadMemStats(&ms)
		s := e.Stats()
		t.Logf("goroutines %d, heap %d MiB, recorded %d, created %d, patched %d, dropped %d", runtime.NumGoroutine(),
			ms.HeapAlloc>>20, s.Recorded, s.Created, s.Patched, s.DroppedSinkQueue)
	}
	stop.Store(true)
	wg.Wait()
	e.Shutdown()
	s := e.Stats()
	accounted(t, "faulty sink", fw.Stats(), s.Queued)
	accounted(t, "healthy sink", hw.Stats(), s.Queued)
	deadline := time.Now().Add(failsafe)
	for runtime.NumGoroutine() > baseline && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > baseline {
		t.Errorf("%d goroutines after shutdown, %d before", n, baseline)
	}
}
