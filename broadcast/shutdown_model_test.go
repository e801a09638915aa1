package broadcast_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldgo/herald/broadcast"
)

// The model in this file races Stop and Shutdown against reads in both
// read modes, with all three policies and prefixes, and then holds the
// counters to the sums Stats, Dropped and Delivered promise.
//
// One goroutine, the driver, publishes consecutive integers and registers
// watchers between them, so each watcher's first owed value (lo) is exact.
// Each watcher has one reader, so its order is checked exactly. Stop comes
// from the reader (inside an All loop or between reads) and from a stopper
// goroutine, racing the driver; Shutdown starts on its own goroutine while
// the driver still publishes, and the driver publishes until ErrClosed.

type shutdownWatch struct {
	id      int
	w       *broadcast.Watcher[int]
	policy  broadcast.FullPolicy
	prefix  []int
	lo      int
	channel bool
	selfish bool // its reader may Stop it
	stopped atomic.Bool
	got     []int // by its one reader
}

func TestModelStopAndShutdownRaceReads(t *testing.T) {
	for seed := range uint64(10) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runShutdownModel(t, seed, false) })
	}
}

// TestModelAbortedShutdownRacesReads is the model with a Block
// watcher nobody reads and a Shutdown whose context ends while it waits:
// only Block watchers may lose values to it, and every loss is counted.
func TestModelAbortedShutdownRacesReads(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runShutdownModel(t, 1000+seed, true) })
	}
}

func runShutdownModel(t *testing.T, seed uint64, abort bool) {
	rng := rand.New(rand.NewPCG(seed, 27))
	b := broadcast.New[int](broadcast.Options{
		QueueLength:         1 + rng.IntN(5),
		IncomingQueueLength: 1 + rng.IntN(4),
	})
	var (
		all      []*shutdownWatch
		readers  sync.WaitGroup
		stoppers sync.WaitGroup
		toStop   = make(chan *shutdownWatch, 64)
	)
	stoppers.Go(func() {
		for a := range toStop {
			runtime.Gosched()
			a.stopped.Store(true)
			a.w.Stop()
		}
	})

	read := func(a *shutdownWatch, rr *rand.Rand) {
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		record := func(v int) {
			a.got = append(a.got, v)
			if a.selfish && rr.IntN(60) == 0 {
				a.stopped.Store(true)
				a.w.Stop() // from the reading goroutine, maybe inside an All loop
			}
			if rr.IntN(6) == 0 {
				runtime.Gosched()
			}
		}
		for {
			switch op := rr.IntN(10); {
			case op < 3:
				v, err := a.w.Next(context.Background())
				if errors.Is(err, broadcast.ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("watcher %d: Next: %v", a.id, err)
					return
				}
				record(v)
			case op < 6:
				k, i, done := 1+rr.IntN(6), 0, true
				for v := range a.w.All() {
					record(v)
					if i++; i == k {
						done = false
						break
					}
				}
				if done {
					return
				}
			case op < 8:
				v, err := a.w.Next(ended)
				switch {
				case errors.Is(err, broadcast.ErrClosed):
					return
				case err == nil:
					record(v)
				case !errors.Is(err, context.Canceled):
					t.Errorf("watcher %d: Next(ended): %v", a.id, err)
					return
				}
			default:
				if !a.channel {
					continue
				}
				v, ok := <-a.w.Events()
				if !ok {
					return
				}
				record(v)
			}
		}
	}

	var stuck *shutdownWatch
	published, refused := 0, uint64(0)
	shutdownAt := 150 + rng.IntN(150)
	shutdownErr := make(chan error, 1)
	shutdownStarted := false
	var cancelShutdown context.CancelFunc
	closedSeen := func(what string) {
		select {
		case <-b.Done():
		default:
			t.Errorf("%s returned ErrClosed while Done() is open", what)
		}
	}
driving:
	for step := 0; ; step++ {
		if step == shutdownAt {
			if abort {
				// A Block watcher nobody reads, with values queued
				// behind it, holds the distributor back.
				channel := rng.IntN(2) == 0
				w, err := b.WatchWith(broadcast.WatchOptions{QueueLength: 1, Full: broadcast.Block, Read: readMode(channel)})
				if err != nil {
					t.Fatal(err)
				}
				stuck = &shutdownWatch{id: -1, w: w, policy: broadcast.Block, lo: published, channel: channel}
				for range 3 {
					if ok, _ := b.TryPublish(published); ok {
						published++
					} else {
						refused++
					}
				}
			}
			shutdownStarted = true
			ctx, cancel := context.WithCancel(context.Background())
			cancelShutdown = cancel
			go func() { shutdownErr <- b.Shutdown(ctx) }()
		}
		switch op := rng.IntN(20); {
		case op < 11:
			for range 1 + rng.IntN(6) {
				if err := b.Publish(context.Background(), published); err != nil {
					if !errors.Is(err, broadcast.ErrClosed) {
						t.Fatalf("Publish: %v", err)
					}
					closedSeen("Publish")
					break driving
				}
				published++
			}
		case op < 14:
			ok, err := b.TryPublish(published)
			if err != nil {
				closedSeen("TryPublish")
				break driving
			}
			if ok {
				published++
			} else {
				refused++
			}
		case op < 17 && len(all) < 14:
			a := &shutdownWatch{id: len(all), lo: published, policy: broadcast.FullPolicy(1 + rng.IntN(3))}
			for j := range rng.IntN(4) {
				a.prefix = append(a.prefix, -(100*a.id + j + 1))
			}
			qlen := rng.IntN(4)
			a.channel = rng.IntN(2) == 0
			w, err := b.WatchWith(broadcast.WatchOptions{QueueLength: qlen, Full: a.policy, Read: readMode(a.channel)}, a.prefix...)
			if err != nil {
				closedSeen("WatchWith")
				break driving
			}
			a.w = w
			a.selfish = rng.IntN(3) == 0
			all = append(all, a)
			rr := rand.New(rand.NewPCG(seed, uint64(a.id)))
			readers.Go(func() { read(a, rr) })
			if rng.IntN(6) == 0 {
				toStop <- a
			}
		case op < 18 && len(all) > 0 && rng.IntN(5) == 0:
			toStop <- all[rng.IntN(len(all))]
		default:
			if shutdownStarted {
				continue
			}
			if err := b.Flush(context.Background()); err != nil {
				t.Fatalf("Flush: %v", err)
			}
			for _, a := range all {
				if a.policy == broadcast.Block && !a.selfish && !a.stopped.Load() {
					// Stopped by the stopper goroutine meanwhile: Delivered
					// may then be short. Only an open watcher is held to it.
					d := a.w.Delivered()
					if !a.stopped.Load() && d != uint64(published-a.lo) {
						t.Errorf("after Flush, open Block watcher %d Delivered() = %d, want %d", a.id, d, published-a.lo)
					}
				}
			}
		}
	}
	if !shutdownStarted {
		t.Fatal("driver ended before Shutdown")
	}
	if abort {
		cancelShutdown() // the unread Block watcher will never make room
	}
	err := <-shutdownErr
	cancelShutdown()
	switch {
	case !abort && err != nil:
		t.Errorf("Shutdown() = %v, want nil", err)
	case abort && err != nil && !errors.Is(err, context.Canceled):
		t.Errorf("Shutdown() = %v, want Canceled or nil", err)
	}
	close(toStop)
	stoppers.Wait()
	waited := make(chan struct{})
	go func() { readers.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(failsafe):
		t.Fatalf("readers still reading %v after Shutdown returned", failsafe)
	}
	if stuck != nil {
		stuck.got = slices.Collect(stuck.w.All())
		all = append(all, stuck)
	}
	s := b.Stats()
	again := b.Shutdown(context.Background())
	switch {
	case s.DroppedShutdown > 0 && !errors.Is(again, broadcast.ErrClosed):
		t.Errorf("later Shutdown() = %v after %d values were abandoned, want ErrClosed", again, s.DroppedShutdown)
	case s.DroppedShutdown == 0 && again != nil:
		t.Errorf("later Shutdown() = %v, nothing abandoned, want nil", again)
	}
	if s.Published != uint64(published) || s.DroppedIncoming != refused || s.Watchers != 0 {
		t.Errorf("Stats %+v, want Published %d, DroppedIncoming %d, Watchers 0", s, published, refused)
	}
	if !abort && s.DroppedShutdown != 0 {
		t.Errorf("DroppedShutdown %d after a clean Shutdown", s.DroppedShutdown)
	}
	var sumDropped, sumDelivered, oldest, blockDropped uint64
	for _, a := range all {
		sumDropped += a.w.Dropped()
		sumDelivered += a.w.Delivered()
		if a.policy == broadcast.Block {
			blockDropped += a.w.Dropped()
		}
		oldest += checkShutdownWatch(t, a, published)
	}
	stopped := 0
	for _, a := range all {
		if a.stopped.Load() {
			stopped++
		}
	}
	t.Logf("%d watchers (%d stopped), Shutdown() = %v, %+v", len(all), stopped, err, s)
	if d := s.DroppedNewest + s.DroppedOldest + s.DroppedShutdown; d != sumDropped {
		t.Errorf("sum of Dropped() %d, Stats drops %d (%+v)", sumDropped, d, s)
	}
	if sumDelivered != s.Delivered {
		t.Errorf("sum of Delivered() %d, Stats.Delivered %d", sumDelivered, s.Delivered)
	}
	if oldest != s.DroppedOldest {
		t.Errorf("DropOldest watchers discarded %d (Delivered - read), Stats.DroppedOldest %d", oldest, s.DroppedOldest)
	}
	if s.DroppedShutdown > blockDropped {
		t.Errorf("DroppedShutdown %d, Block watchers dropped %d: a non-Block watcher lost values to Shutdown", s.DroppedShutdown, blockDropped)
	}
}

// checkShutdownWatch checks one drained watcher and returns how many of its
// delivered values its policy discarded from the queue.
func checkShutdownWatch(t *testing.T, a *shutdownWatch, published int) (discarded uint64) {
	t.Helper()
	n := len(a.prefix)
	if len(a.got) < n || !slices.Equal(a.got[:n], a.prefix) {
		t.Errorf("watcher %d (%v): read %v, want its prefix %v first, whole", a.id, a.policy, a.got, a.prefix)
		return 0
	}
	rest := a.got[n:]
	for i, v := range rest {
		if v < a.lo || v >= published || (i > 0 && v <= rest[i-1]) {
			t.Errorf("watcher %d (%v): %d out of order or outside [%d,%d) at %d of %v", a.id, a.policy, v, a.lo, published, i, rest)
			return 0
		}
	}
	owed := published - a.lo
	dropped, delivered, read := a.w.Dropped(), a.w.Delivered(), uint64(len(rest))
	switch got := len(rest) + int(dropped); {
	case !a.stopped.Load() && got != owed:
		t.Errorf("watcher %d (%v, channel %v): read %d + Dropped %d = %d, owed %d", a.id, a.policy, a.channel, len(rest), dropped, got, owed)
	case got > owed:
		t.Errorf("stopped watcher %d (%v): read %d + Dropped %d above owed %d", a.id, a.policy, len(rest), dropped, owed)
	}
	if a.policy == broadcast.Block && dropped == 0 {
		for i, v := range rest {
			if v != a.lo+i {
				t.Errorf("Block watcher %d skipped a value: %v from %d", a.id, rest, a.lo)
				break
			}
		}
	}
	if a.policy != broadcast.DropOldest {
		if delivered != read {
			t.Errorf("watcher %d (%v): Delivered %d, read %d of its published values, none discarded", a.id, a.policy, delivered, read)
		}
		return 0
	}
	if delivered < read || delivered-read > dropped {
		t.Errorf("DropOldest watcher %d: Delivered %d, read %d, Dropped %d", a.id, delivered, read, dropped)
		return 0
	}
	return delivered - read
}
