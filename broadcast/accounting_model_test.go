package broadcast_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/heraldgo/herald/broadcast"
)

// TestAccountingModel drives one broadcaster from a single goroutine
// (so every watcher's window of owed values is exact) while each watcher is
// read by one or two goroutines that mix Next, All loops that break, Next
// with an ended context and, on channel watchers (Events read first),
// receives from Events. It checks, exactly:
//
//   - per watcher: no value twice, none outside its prefix and window; with
//     one reader, prefix first and in queue order; a Block watcher with one
//     reader reads its prefix and window exactly;
//   - per watcher: read + Dropped = prefix + window (nothing lost uncounted);
//   - after every Flush: Stats.Delivered + Stats.DroppedNewest = sum of the
//     windows so far, and each Block watcher's Delivered = its window;
//   - at the end: Published, Watchers, the sum of Dropped and of Delivered
//     against Stats, Delivered = read + DroppedOldest, and no prefix value
//     lost.
func TestAccountingModel(t *testing.T) {
	seeds := 16
	if testing.Short() {
		seeds = 4
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runAccountingModel(t, seed, false) })
	}
}

// TestAccountingModelAbort is the model ended by a Shutdown whose
// context has already ended: Block watchers may lose values (counted in
// DroppedShutdown); every other watcher must still get every value.
func TestAccountingModelAbort(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runAccountingModel(t, 100+seed, true) })
	}
}

type accountingWatch struct {
	id      int
	w       *broadcast.Watcher[int]
	policy  broadcast.FullPolicy
	prefix  []int
	lo, hi  int // window: values lo..hi-1 (hi = -1 while open)
	readers int
	channel bool // Events read first: a channel watcher
	mu      sync.Mutex
	got     [][]int // per reader
}

func (a *accountingWatch) window(published int) int {
	if a.hi >= 0 {
		return a.hi - a.lo
	}
	return published - a.lo
}

func runAccountingModel(t *testing.T, seed uint64, abort bool) {
	rng := rand.New(rand.NewPCG(seed, 7))
	bPolicy := broadcast.FullPolicy(rng.IntN(4))
	b := broadcast.New[int](broadcast.Options{
		QueueLength:         1 + rng.IntN(6),
		IncomingQueueLength: 1 + rng.IntN(5),
		Full:                bPolicy,
	})
	bPolicy = max(bPolicy, broadcast.Block) // the zero value means Block
	var all []*accountingWatch
	var live []*accountingWatch
	var readers sync.WaitGroup
	published, refused := 0, uint64(0)
	next := 0

	startReader := func(a *accountingWatch, r int, rrng *rand.Rand) {
		readers.Go(func() {
			record := func(v int) {
				a.mu.Lock()
				a.got[r] = append(a.got[r], v)
				a.mu.Unlock()
				if rrng.IntN(4) == 0 {
					runtime.Gosched()
				}
			}
			ended, cancel := context.WithCancel(context.Background())
			cancel()
			for {
				switch op := rrng.IntN(10); {
				case op < 3:
					v, err := a.w.Next(context.Background())
					if errors.Is(err, broadcast.ErrClosed) {
						return
					}
					if err != nil {
						t.Errorf("Next: %v", err)
						return
					}
					record(v)
				case op < 6:
					k, i, done := 1+rrng.IntN(6), 0, true
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
					case errors.Is(err, context.Canceled):
						runtime.Gosched()
					case err != nil:
						t.Errorf("Next(ended): %v", err)
						return
					default:
						record(v)
					}
				default:
					if !a.channel {
						continue // a queue watcher's Events is closed
					}
					ch := a.w.Events()
					for range 1 + rrng.IntN(6) {
						v, ok := <-ch
						if !ok {
							return
						}
						record(v)
					}
				}
			}
		})
	}

	checkFlush := func(where int) {
		s := b.Stats()
		sum := 0
		for _, a := range all {
			sum += a.window(published)
			if a.hi < 0 && a.policy == broadcast.Block && a.w.Delivered() != uint64(a.window(published)) {
				t.Errorf("step %d: after Flush, Block watcher %d Delivered() = %d, window %d", where, a.id, a.w.Delivered(), a.window(published))
			}
		}
		if got := s.Delivered + s.DroppedNewest; got != uint64(sum) {
			t.Errorf("step %d: after Flush, Delivered %d + DroppedNewest %d = %d, sum of windows %d (%+v)", where, s.Delivered, s.DroppedNewest, got, sum, s)
		}
	}

	steps := 400
	for step := range steps {
		switch op := rng.IntN(20); {
		case op < 8:
			for range 1 + rng.IntN(8) {
				if err := b.Publish(context.Background(), next); err != nil {
					t.Fatalf("Publish: %v", err)
				}
				next++
				published++
			}
		case op < 10:
			ok, err := b.TryPublish(next)
			if err != nil {
				t.Fatalf("TryPublish: %v", err)
			}
			if ok {
				next++
				published++
			} else {
				refused++
			}
		case op < 13 && len(live) < 12:
			a := &accountingWatch{id: len(all), hi: -1, lo: published}
			for j := range rng.IntN(4) {
				a.prefix = append(a.prefix, -(a.id*10 + j + 1))
			}
			choice := broadcast.FullPolicy(rng.IntN(4))
			a.channel = a.id%2 == 0
			var err error
			a.w, err = b.WatchWith(broadcast.WatchOptions{QueueLength: rng.IntN(5), Full: choice, Read: readMode(a.channel)}, a.prefix...)
			if err != nil {
				t.Fatalf("WatchWith: %v", err)
			}
			a.policy = choice
			if a.policy == 0 {
				a.policy = bPolicy
			}
			a.readers = 1 + rng.IntN(2)
			a.got = make([][]int, a.readers)
			all = append(all, a)
			live = append(live, a)
			for r := range a.readers {
				startReader(a, r, rand.New(rand.NewPCG(seed, uint64(1000*a.id+r))))
			}
		case op < 15 && len(live) > 0:
			i := rng.IntN(len(live))
			a := live[i]
			if err := b.Flush(context.Background()); err != nil {
				t.Fatalf("Flush: %v", err)
			}
			a.hi = published
			a.w.Stop()
			live = slices.Delete(live, i, i+1)
		default:
			if err := b.Flush(context.Background()); err != nil {
				t.Fatalf("Flush: %v", err)
			}
			checkFlush(step)
		}
	}
	if err := b.Flush(context.Background()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	checkFlush(steps)
	ctx := context.Background()
	var stuckW *accountingWatch
	if abort {
		// A Block watcher nobody reads holds the distributor back, with
		// values queued behind it, when the Shutdown's context has ended.
		stuck := &accountingWatch{id: len(all), hi: -1, lo: published, policy: broadcast.Block, readers: 1, got: make([][]int, 1)}
		var err error
		if stuck.w, err = b.WatchWith(broadcast.WatchOptions{QueueLength: 1, Full: broadcast.Block}); err != nil {
			t.Fatal(err)
		}
		all = append(all, stuck)
		live = append(live, stuck)
		for range 2 + rng.IntN(6) {
			ok, err := b.TryPublish(next)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				refused++
				break
			}
			next++
			published++
		}
		c, cancel := context.WithCancel(ctx)
		cancel()
		ctx = c
		stuckW = stuck
	}
	if err := b.Shutdown(ctx); err != nil && !abort {
		t.Fatalf("Shutdown: %v", err)
	}
	for _, a := range live {
		a.hi = published
	}
	readers.Wait()
	if stuckW != nil {
		stuckW.got[0] = slices.Collect(stuckW.w.All())
	}

	s := b.Stats()
	if s.Published != uint64(published) || s.DroppedIncoming != refused || s.Watchers != 0 {
		t.Errorf("Stats %+v, want Published %d, DroppedIncoming %d, Watchers 0", s, published, refused)
	}
	if !abort && s.DroppedShutdown != 0 {
		t.Errorf("DroppedShutdown %d after a clean Shutdown", s.DroppedShutdown)
	}
	var sumDropped, sumDelivered, readPublished, prefixLost uint64
	for _, a := range all {
		sumDropped += a.w.Dropped()
		sumDelivered += a.w.Delivered()
		checkAccountingWatch(t, a, abort)
		prefixLost += uint64(len(a.prefix))
		for _, g := range a.got {
			for _, v := range g {
				if v >= 0 {
					readPublished++
				} else {
					prefixLost--
				}
			}
		}
	}
	if prefixLost > 0 {
		t.Errorf("%d prefix values lost: a prefix is never lost", prefixLost)
	}
	var blockDropped uint64
	for _, a := range all {
		if a.policy == broadcast.Block {
			blockDropped += a.w.Dropped()
		}
	}
	if s.DroppedShutdown > blockDropped {
		t.Errorf("DroppedShutdown %d, but Block watchers dropped only %d: a non-Block watcher lost values to Shutdown", s.DroppedShutdown, blockDropped)
	}
	t.Logf("%d watchers, %+v", len(all), s)
	if drops := s.DroppedNewest + s.DroppedOldest + s.DroppedShutdown; drops != sumDropped {
		t.Errorf("sum of Dropped() %d, Stats drops %d (%+v)", sumDropped, drops, s)
	}
	if sumDelivered != s.Delivered {
		t.Errorf("sum of Delivered() %d, Stats.Delivered %d", sumDelivered, s.Delivered)
	}
	if got := readPublished + s.DroppedOldest; got != s.Delivered {
		t.Errorf("read %d + DroppedOldest %d = %d, Stats.Delivered %d", readPublished, s.DroppedOldest, got, s.Delivered)
	}
}

func checkAccountingWatch(t *testing.T, a *accountingWatch, abort bool) {
	t.Helper()
	seen := map[int]bool{}
	total := 0
	for r, g := range a.got {
		total += len(g)
		last := -1 << 30
		inPrefix := true
		for _, v := range g {
			if seen[v] {
				t.Errorf("watcher %d: value %d read twice", a.id, v)
			}
			seen[v] = true
			switch {
			case v < 0:
				if !slices.Contains(a.prefix, v) {
					t.Errorf("watcher %d: read %d, not of its prefix %v", a.id, v, a.prefix)
				}
				if !inPrefix && a.readers == 1 {
					t.Errorf("watcher %d: prefix value %d after a published one", a.id, v)
				}
			case v < a.lo || v >= a.hi:
				t.Errorf("watcher %d: read %d outside its window [%d,%d)", a.id, v, a.lo, a.hi)
			default:
				inPrefix = false
			}
			if a.readers == 1 {
				key := v
				if v < 0 {
					key = -1 << 29 // prefix values first, in prefix order
					if i := slices.Index(a.prefix, v); i >= 0 {
						key += i
					}
				}
				if key <= last {
					t.Errorf("watcher %d reader %d: %d out of order in %v", a.id, r, v, g)
					break
				}
				last = key
			}
		}
	}
	owed := len(a.prefix) + (a.hi - a.lo)
	if got := total + int(a.w.Dropped()); got != owed {
		t.Errorf("watcher %d (%v, %d readers): read %d + Dropped %d = %d, owed prefix %d + window %d = %d",
			a.id, a.policy, a.readers, total, a.w.Dropped(), got, len(a.prefix), a.hi-a.lo, owed)
	}
	if !abort && a.policy == broadcast.Block && a.readers == 1 && a.w.Dropped() == 0 && total != owed {
		t.Errorf("Block watcher %d read %d of %d owed", a.id, total, owed)
	}
}
