package broadcast_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldgo/herald/broadcast"
)

// stormReader reads w until it is closed, mixing Next, Next with an ended
// context, All loops that break, and, if w is a channel watcher, channel
// reads; if mayStop, it calls Stop itself once in 300 values. It returns
// the values read.
func stormReader(t *testing.T, w *broadcast.Watcher[int], rng *rand.Rand, mayStop, channel bool) []int {
	var got []int
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	read := func(v int) {
		got = append(got, v)
		if mayStop && rng.IntN(300) == 0 {
			w.Stop()
		}
		if rng.IntN(8) == 0 {
			runtime.Gosched()
		}
	}
	// Each wait is bounded by the failsafe on its own: a reader lives as
	// long as the storm, which takes longer than the failsafe on a loaded
	// machine, so one bound for its whole life would report a slow storm
	// as a stranded reader.
	for {
		switch op := rng.IntN(10); {
		case op < 3:
			ctx, cancel := context.WithTimeout(context.Background(), failsafe)
			v, err := w.Next(ctx)
			cancel()
			if errors.Is(err, broadcast.ErrClosed) {
				return got
			}
			if err != nil {
				t.Errorf("Next: %v (a parked reader was stranded?)", err)
				return got
			}
			read(v)
		case op < 6:
			k, i, done := 1+rng.IntN(8), 0, true
			for v := range w.All() {
				read(v)
				if i++; i == k {
					done = false
					break
				}
			}
			if done {
				return got
			}
		case op < 8:
			v, err := w.Next(ended)
			switch {
			case errors.Is(err, broadcast.ErrClosed):
				return got
			case err == nil:
				read(v)
			}
		default:
			if !channel {
				continue // a queue watcher's Events is closed
			}
			ch := w.Events()
			for range 1 + rng.IntN(8) {
				stranded := time.NewTimer(failsafe)
				select {
				case v, ok := <-ch:
					stranded.Stop()
					if !ok {
						return got
					}
					read(v)
				case <-stranded.C:
					t.Errorf("channel read stranded")
					return got
				}
			}
		}
	}
}

// TestStorm: publishers, Flush callers, and watchers that join (with
// and without a prefix, as channel watchers or queue watchers), are read by
// up to three goroutines mixing every read method the watcher allows, and
// stopped from inside and outside, all at once; Shutdown ends it. Anchors registered before
// the first value check Flush: after it returns, every value whose Publish
// returned before Flush was called is placed in (or dropped by) each.
// Afterwards the counters must add up exactly.
func TestStorm(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runStorm(t, seed) })
	}
}

func runStorm(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	b := broadcast.New[int](broadcast.Options{QueueLength: 1 + rng.IntN(8), IncomingQueueLength: 1 + rng.IntN(8)})

	type watched struct {
		w       *broadcast.Watcher[int]
		prefix  int
		channel bool // a channel watcher
		mu      sync.Mutex
		got     []int
	}
	var wmu sync.Mutex
	var ws []*watched
	var wg sync.WaitGroup
	addReaders := func(x *watched, n int, mayStop bool, s uint64) {
		for r := range n {
			rr := rand.New(rand.NewPCG(s, uint64(r)))
			wg.Go(func() {
				got := stormReader(t, x.w, rr, mayStop, x.channel)
				x.mu.Lock()
				x.got = append(x.got, got...)
				x.mu.Unlock()
			})
		}
	}

	// Anchors: registered before anything is published, never stopped.
	var anchors []*watched
	for i, p := range []broadcast.FullPolicy{broadcast.Block, broadcast.Block, broadcast.DropNewest, broadcast.DropOldest} {
		w, err := b.WatchWith(broadcast.WatchOptions{Full: p, Read: readMode(i%2 == 1)})
		if err != nil {
			t.Fatal(err)
		}
		x := &watched{w: w, channel: i%2 == 1}
		anchors = append(anchors, x)
		ws = append(ws, x)
		addReaders(x, 1+i%2, false, seed*1000+uint64(i))
	}

	// A flusher flushes again only once a value was published since its
	// last Flush: flushing back to back, the two took most of a single
	// CPU (GOMAXPROCS=1) from the publishers, and a storm lasted minutes.
	const flushers = 2
	var completed atomic.Int64
	var progress [flushers]chan struct{}
	for f := range progress {
		progress[f] = make(chan struct{}, 1)
	}
	published := func() {
		completed.Add(1)
		for _, c := range progress {
			select {
			case c <- struct{}{}:
			default:
			}
		}
	}
	var pubs sync.WaitGroup
	const publishers, perPublisher = 3, 1500
	var next atomic.Int64
	for p := range publishers {
		pr := rand.New(rand.NewPCG(seed, uint64(p)))
		pubs.Go(func() {
			for range perPublisher {
				v := int(next.Add(1))
				if pr.IntN(3) == 0 {
					ok, err := b.TryPublish(v)
					if err != nil {
						t.Errorf("TryPublish: %v", err)
						return
					}
					if ok {
						published()
					}
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), failsafe)
				err := b.Publish(ctx, v)
				cancel()
				if err != nil {
					t.Errorf("Publish: %v", err)
					return
				}
				published()
			}
		})
	}

	stop := make(chan struct{})
	var side sync.WaitGroup
	// Flushers check the anchors.
	for f := range flushers {
		side.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-progress[f]:
				}
				before := uint64(completed.Load())
				ctx, cancel := context.WithTimeout(context.Background(), failsafe)
				err := b.Flush(ctx)
				cancel()
				if err != nil {
					t.Errorf("Flush %d: %v", f, err)
					return
				}
				for i, x := range anchors {
					if got := x.w.Delivered() + x.w.Dropped(); got < before {
						t.Errorf("after Flush, anchor %d placed+dropped %d < %d values published before Flush", i, got, before)
					}
				}
			}
		})
	}
	// Churn: watchers join, get readers, and are stopped by outsiders.
	for c := range 3 {
		cr := rand.New(rand.NewPCG(seed, uint64(500+c)))
		side.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				n := cr.IntN(3)
				prefix := make([]int, n)
				for j := range prefix {
					prefix[j] = -1 - j
				}
				qlen, full := cr.IntN(4), broadcast.FullPolicy(cr.IntN(4))
				channel := cr.IntN(2) == 0
				w, err := b.WatchWith(broadcast.WatchOptions{QueueLength: qlen, Full: full, Read: readMode(channel)}, prefix...)
				if err != nil {
					t.Errorf("WatchWith: %v", err)
					return
				}
				x := &watched{w: w, prefix: n, channel: channel}
				wmu.Lock()
				ws = append(ws, x)
				wmu.Unlock()
				addReaders(x, 1+cr.IntN(3), true, cr.Uint64())
				for range cr.IntN(100) {
					runtime.Gosched()
				}
				w.Stop()
			}
		})
	}

	pubs.Wait()
	close(stop)
	side.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	// Shutdown closes every watcher even when ctx ends first, so the
	// readers end either way: wait for them before returning, as they may
	// still report (a reader in Next or on the channel does so within the
	// failsafe; one stranded in an All loop never returns, nor reports).
	if err := b.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
		ended := make(chan struct{})
		go func() { wg.Wait(); close(ended) }()
		select {
		case <-ended:
		case <-time.After(2 * failsafe):
			t.Errorf("readers still running %v after Shutdown returned", 2*failsafe)
		}
		return
	}
	wg.Wait()

	s := b.Stats()
	if s.Published != uint64(completed.Load()) || s.Watchers != 0 || s.DroppedShutdown != 0 {
		t.Errorf("Stats %+v: want Published %d, Watchers 0, DroppedShutdown 0", s, completed.Load())
	}
	var dropped, delivered, readPublished, prefixLost uint64
	for _, x := range ws {
		dropped += x.w.Dropped()
		delivered += x.w.Delivered()
		seen := map[int]bool{}
		nPrefix := 0
		for _, v := range x.got {
			if seen[v] {
				t.Errorf("value %d read twice from one watcher", v)
			}
			seen[v] = true
			if v < 0 {
				nPrefix++
			} else {
				readPublished++
			}
		}
		prefixLost += uint64(x.prefix - nPrefix)
	}
	// Block anchors: every value read.
	for i, x := range anchors[:2] {
		if uint64(len(x.got))+x.w.Dropped() != s.Published || x.w.Dropped() != 0 {
			t.Errorf("Block anchor %d read %d of %d, dropped %d", i, len(x.got), s.Published, x.w.Dropped())
		}
	}
	if sum := s.DroppedNewest + s.DroppedOldest + s.DroppedShutdown; sum != dropped {
		t.Errorf("sum of Dropped %d, Stats drops %d", dropped, sum)
	}
	if delivered != s.Delivered {
		t.Errorf("sum of Delivered %d, Stats.Delivered %d", delivered, s.Delivered)
	}
	if got := readPublished + s.DroppedOldest; got != s.Delivered {
		t.Errorf("read %d + DroppedOldest %d = %d, Delivered %d", readPublished, s.DroppedOldest, got, s.Delivered)
	}
	if prefixLost > 0 {
		t.Errorf("%d prefix values lost: a prefix is never lost", prefixLost)
	}
	t.Logf("%d watchers, %+v", len(ws), s)
}
