package broadcast_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/heraldgo/herald/broadcast"
)

// TestRandomizedModel runs random mixes of Watch, WatchWith, Publish,
// TryPublish, Stop and Shutdown from several goroutines and checks every
// watcher's history against the broadcaster's promises:
//
//   - from each publisher, a watcher's values increase and none was queued
//     before its Watch call; values queued after Watch returned are owed;
//   - a Block watcher has no gaps, and unless stopped, gets every owed value;
//   - a dropping watcher accounts for every owed value as read or Dropped;
//   - after Shutdown every call reports ErrClosed and the counters add up.
func TestRandomizedModel(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runModel(t, seed, 3, 600, 4) })
	}
}

// TestStress is the model test at scale: 8 publishers and 50 watchers
// joining, reading, stopping and joining again, Shutdown in the middle.
// Sized to finish in a few seconds on 2 cores under the race detector.
func TestStress(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test")
	}
	for seed := range uint64(2) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runModel(t, 1000+seed, 8, 2500, 50) })
	}
}

type modelMsg struct{ pub, seq int }

type modelWatch struct {
	policy  broadcast.FullPolicy
	stopped bool
	lo, hi  []int // per publisher: attempts completed before Watch, started before it returned
	got     []modelMsg
	dropped uint64
}

func runModel(t *testing.T, seed uint64, publishers, attempts, actors int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	b := broadcast.New[modelMsg](broadcast.Options{
		QueueLength:         1 + rng.IntN(8),
		IncomingQueueLength: 1 + rng.IntN(4),
	})
	started, completed := make([]atomic.Int64, publishers), make([]atomic.Int64, publishers)
	accepted := make([][]bool, publishers)
	var refused atomic.Uint64
	shutdownAt := int64(rng.IntN(publishers * attempts))
	var total atomic.Int64

	var pubs sync.WaitGroup
	for p := range publishers {
		prng := rand.New(rand.NewPCG(seed, uint64(100+p)))
		accepted[p] = make([]bool, attempts)
		pubs.Go(func() {
			for i := range attempts {
				started[p].Store(int64(i + 1))
				var err error
				ok := true
				if prng.IntN(2) == 0 {
					err = b.Publish(context.Background(), modelMsg{p, i})
				} else {
					ok, err = b.TryPublish(modelMsg{p, i})
					if !ok && err == nil {
						refused.Add(1)
					}
				}
				if err != nil && !errors.Is(err, broadcast.ErrClosed) {
					t.Errorf("publish: %v", err)
				}
				accepted[p][i] = ok && err == nil
				completed[p].Store(int64(i + 1))
				if total.Add(1) == shutdownAt {
					if err := b.Shutdown(context.Background()); err != nil {
						t.Errorf("Shutdown: %v", err)
					}
				}
			}
		})
	}

	var mu sync.Mutex
	var history []*modelWatch
	var acts sync.WaitGroup
	for a := range actors {
		arng := rand.New(rand.NewPCG(seed, uint64(200+a)))
		acts.Go(func() {
			for {
				h := &modelWatch{lo: make([]int, publishers), hi: make([]int, publishers)}
				for p := range publishers {
					h.lo[p] = int(completed[p].Load())
				}
				choice := broadcast.FullPolicy(arng.IntN(4)) // 0: the broadcaster's, Block
				h.policy = max(choice, broadcast.Block)
				qlen := arng.IntN(6)
				stopAfter := -1
				if arng.IntN(2) == 0 {
					stopAfter = arng.IntN(200)
				}
				how := arng.IntN(3) // read by Events, All or Next
				w, err := b.WatchWith(broadcast.WatchOptions{QueueLength: qlen, Full: choice, Read: readMode(how == 0)})
				if errors.Is(err, broadcast.ErrClosed) {
					return
				}
				for p := range publishers {
					h.hi[p] = int(started[p].Load())
				}
				read := func(v modelMsg) {
					h.got = append(h.got, v)
					if len(h.got) == stopAfter {
						w.Stop()
						h.stopped = true
					}
				}
				switch how {
				case 0:
					for v := range w.Events() {
						read(v)
					}
				case 1:
					for v := range w.All() {
						read(v)
					}
				default:
					for {
						v, err := w.Next(context.Background())
						if err != nil {
							break
						}
						read(v)
					}
				}
				w.Stop()
				h.dropped = w.Dropped()
				mu.Lock()
				history = append(history, h)
				mu.Unlock()
				if h.stopped && arng.IntN(3) == 0 {
					continue // join again
				}
				if !h.stopped {
					return // closed by Shutdown
				}
			}
		})
	}
	pubs.Wait()
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	acts.Wait()

	nAccepted := 0
	for p := range publishers {
		for _, ok := range accepted[p] {
			if ok {
				nAccepted++
			}
		}
	}
	s := b.Stats()
	if s.Published != uint64(nAccepted) || s.DroppedIncoming != refused.Load() || s.Watchers != 0 {
		t.Errorf("Stats() = %+v, want Published %d, DroppedIncoming %d, Watchers 0", s, nAccepted, refused.Load())
	}
	if s.DroppedShutdown != 0 {
		t.Errorf("DroppedShutdown = %d with every watcher reading", s.DroppedShutdown)
	}
	for i, h := range history {
		checkHistory(t, i, h, accepted)
	}
}

func checkHistory(t *testing.T, i int, h *modelWatch, accepted [][]bool) {
	t.Helper()
	publishers := len(accepted)
	first := make([]int, publishers)
	last := make([]int, publishers)
	count := make([]int, publishers)
	for p := range first {
		first[p], last[p] = -1, -1
	}
	for _, m := range h.got {
		p := m.pub
		if !accepted[p][m.seq] {
			t.Fatalf("watcher %d got %v, which was never accepted", i, m)
		}
		if m.seq < h.lo[p] {
			t.Fatalf("watcher %d got %v, queued before its Watch call (lo %d)", i, m, h.lo[p])
		}
		if last[p] >= m.seq {
			t.Fatalf("watcher %d got %v after seq %d: out of order", i, m, last[p])
		}
		if h.policy == broadcast.Block && last[p] >= 0 {
			for s := last[p] + 1; s < m.seq; s++ {
				if accepted[p][s] {
					t.Fatalf("Block watcher %d skipped %v", i, modelMsg{p, s})
				}
			}
		}
		if first[p] < 0 {
			first[p] = m.seq
		}
		last[p] = m.seq
		count[p]++
	}
	if h.stopped {
		return
	}
	// Not stopped: it read until the broadcaster closed it.
	minOwed, maxOwed := 0, 0
	for p := range publishers {
		for s, ok := range accepted[p] {
			if !ok {
				continue
			}
			if s >= h.hi[p] {
				minOwed++
				if h.policy == broadcast.Block && (first[p] < 0 || s < first[p] || s > last[p]) {
					t.Fatalf("Block watcher %d missed %v, queued after its Watch returned", i, modelMsg{p, s})
				}
			}
			if s >= h.lo[p] {
				maxOwed++
			}
		}
	}
	got := uint64(len(h.got)) + h.dropped
	if got < uint64(minOwed) || got > uint64(maxOwed) {
		t.Fatalf("%v watcher %d read %d + dropped %d = %d, want within owed [%d, %d]", h.policy, i, len(h.got), h.dropped, got, minOwed, maxOwed)
	}
	if h.policy == broadcast.Block && h.dropped != 0 {
		t.Fatalf("Block watcher %d dropped %d", i, h.dropped)
	}
}
