package broadcast_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/heraldgo/herald/broadcast"
)

// The tests in this file hold the read-mode rule: a watcher's read mode is
// chosen when it is made. A queue watcher (ReadQueue, Watch's) is read
// with Next and All, and its Events is a closed channel; a channel watcher
// (ReadChannel) is read with Events, and Next and All read its channel. No
// read call panics because of another.

// eventsPanic calls w.Events and returns what it panicked with, or nil,
// and whether the channel it returned was closed and empty.
func eventsPanic[T any](w *broadcast.Watcher[T]) (r any, closed bool) {
	defer func() { r = recover() }()
	select {
	case _, ok := <-w.Events():
		return nil, !ok
	default:
		return nil, false
	}
}

// TestEventsOnQueueWatcherIsClosed: Events on a queue watcher, before any
// read, after Next or All, or inside an All loop, returns a closed channel
// and panics not; the watcher goes on reading the rest, in order, with
// nothing lost.
func TestEventsOnQueueWatcherIsClosed(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		pull func(t *testing.T, w *broadcast.Watcher[int]) // reads one value
	}{
		{"Next", func(t *testing.T, w *broadcast.Watcher[int]) { w.Next(context.Background()) }},
		{"Next with an ended context", func(t *testing.T, w *broadcast.Watcher[int]) { w.Next(ended) }},
		{"All, ended by break", func(t *testing.T, w *broadcast.Watcher[int]) {
			for range w.All() {
				break
			}
		}},
		{"All, inside the loop", func(t *testing.T, w *broadcast.Watcher[int]) {
			for range w.All() {
				if r, closed := eventsPanic(w); r != nil || !closed {
					t.Errorf("Events() inside an All loop: panicked with %v, closed %v; want a closed channel", r, closed)
				}
				break
			}
		}},
		{"Events before any read, then Next", func(t *testing.T, w *broadcast.Watcher[int]) {
			if r, closed := eventsPanic(w); r != nil || !closed {
				t.Errorf("Events() first: panicked with %v, closed %v; want a closed channel", r, closed)
			}
			w.Next(context.Background())
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newB[int](t, broadcast.Options{})
			w := watchT(t, b)
			publish(t, b, 1, 2, 3)
			flush(t, b)
			tc.pull(t, w)
			if r, closed := eventsPanic(w); r != nil || !closed {
				t.Fatalf("Events() after a pulling read: panicked with %v, closed %v; want a closed channel", r, closed)
			}
			// The watcher is as it was: the pulling reads still get the
			// rest, in order, with nothing lost.
			w.Stop()
			var got []int
			for {
				v, err := w.Next(context.Background())
				if err != nil {
					break
				}
				got = append(got, v)
			}
			if !slices.Equal(got, []int{2, 3}) || w.Dropped() != 0 {
				t.Errorf("after Events, Next read %v, Dropped() = %d; want [2 3], 0", got, w.Dropped())
			}
		})
	}
}

// TestNoReadPanicsAfterAnother: every order of Events, Next and All, on
// either kind of watcher, including those that used to panic (Events
// after Next or All), reads every value once, in order.
func TestNoReadPanicsAfterAnother(t *testing.T) {
	type read func(w *broadcast.Watcher[int], got *[]int)
	events := func(w *broadcast.Watcher[int], got *[]int) {
		select {
		case v, ok := <-w.Events():
			if ok {
				*got = append(*got, v)
			}
		default:
		}
	}
	next := func(w *broadcast.Watcher[int], got *[]int) {
		if v, err := w.Next(context.Background()); err == nil {
			*got = append(*got, v)
		}
	}
	all := func(w *broadcast.Watcher[int], got *[]int) {
		for v := range w.All() {
			*got = append(*got, v)
			break
		}
	}
	orders := map[string][]read{
		"Next, Events, All":   {next, events, all},
		"All, Events, Next":   {all, events, next},
		"Events, Next, All":   {events, next, all},
		"Events, All, Next":   {events, all, next},
		"All, Next, Events":   {all, next, events},
		"Next, All, Events":   {next, all, events},
		"Events, Events, All": {events, events, all},
	}
	for name, order := range orders {
		for _, mode := range []broadcast.ReadMode{broadcast.ReadQueue, broadcast.ReadChannel} {
			t.Run(name+"/"+mode.String(), func(t *testing.T) {
				b := newB[int](t, broadcast.Options{})
				w := watchMode(t, b, mode)
				publish(t, b, seq(0, 10)...)
				flush(t, b)
				var got []int
				for range 2 {
					for _, r := range order {
						r(w, &got)
					}
				}
				w.Stop()
				got = append(got, slices.Collect(w.All())...)
				if !slices.Equal(got, seq(0, 10)) {
					t.Errorf("read %v, want 0..9 once each, in order", got)
				}
			})
		}
	}
}

// TestAllBreakingHandsBackInOrder: the values an All loop took and did not
// yield go back to the front of the queue, in order, ahead of values
// queued meanwhile; a prefix value handed back still takes no room.
func TestAllBreakingHandsBackInOrder(t *testing.T) {
	b := newB[int](t, broadcast.Options{})
	w := watchWithT(t, b, broadcast.WatchOptions{QueueLength: 4}, -2, -1)
	publish(t, b, 0, 1, 2)
	flush(t, b)
	var got []int
	for v := range w.All() { // takes -2 -1 0 1 2, yields -2
		got = append(got, v)
		publish(t, b, 3, 4, 5) // queued behind the values the loop holds
		flush(t, b)
		break
	}
	if v, err := w.Next(context.Background()); v != -1 || err != nil {
		t.Errorf("Next() after the loop broke = %d, %v; want -1, the first value it held", v, err)
	}
	if bl := w.Backlog(); bl.Queued != 6 {
		t.Errorf("Backlog().Queued = %d with 0 1 2 3 4 5 queued, want 6 (over the queue length of 4 until read)", bl.Queued)
	}
	w.Stop()
	got = append(got, -1)
	got = append(got, slices.Collect(w.All())...)
	if want := seq(-2, 6); !slices.Equal(got, want) {
		t.Errorf("read %v, want %v", got, want)
	}
	if w.Delivered() != 6 || w.Dropped() != 0 {
		t.Errorf("Delivered() = %d, Dropped() = %d; want 6, 0", w.Delivered(), w.Dropped())
	}
}

// TestAllBreakingHandsBackToDropOldest: under DropOldest, the values an
// All loop handed back are the oldest: the next value discards them first.
func TestAllBreakingHandsBackToDropOldest(t *testing.T) {
	b := newB[int](t, broadcast.Options{})
	w := watchWithT(t, b, broadcast.WatchOptions{QueueLength: 3, Full: broadcast.DropOldest})
	publish(t, b, 0, 1, 2)
	flush(t, b)
	for range w.All() { // takes 0 1 2, yields 0
		publish(t, b, 3, 4, 5)
		flush(t, b)
		break
	}
	publish(t, b, 6) // 1 2 3 4 5 queued: 1 2 3 go
	flush(t, b)
	w.Stop()
	if got := slices.Collect(w.All()); !slices.Equal(got, []int{4, 5, 6}) {
		t.Errorf("read %v, want 4 5 6", got)
	}
	if w.Dropped() != 3 {
		t.Errorf("Dropped() = %d, want 3", w.Dropped())
	}
}

// TestPullReadsOnChannelWatcherMix: on a channel watcher, Next, All loops
// that break and receives from Events share the channel: every value is
// read once, in order, and Next and All end once the channel is closed.
func TestPullReadsOnChannelWatcherMix(t *testing.T) {
	b := newB[int](t, broadcast.Options{QueueLength: 20})
	w := watchChanT(t, b)
	ch := w.Events()
	publish(t, b, seq(0, 12)...)
	flush(t, b)
	var got []int
	for round := range 4 {
		v, err := w.Next(context.Background())
		if err != nil {
			t.Fatalf("Next() = %v", err)
		}
		got = append(got, v)
		for v := range w.All() {
			got = append(got, v)
			break // a channel watcher's loop holds nothing back
		}
		if round%2 == 0 {
			got = append(got, <-ch)
		}
	}
	if got2 := w.Events(); got2 != ch {
		t.Errorf("Events() on a channel watcher returned another channel")
	}
	w.Stop()
	got = append(got, slices.Collect(w.All())...)
	if !slices.Equal(got, seq(0, 12)) {
		t.Errorf("mixed reads got %v, want 0..11 once each, in order", got)
	}
	if _, err := w.Next(context.Background()); !errors.Is(err, broadcast.ErrClosed) {
		t.Errorf("Next() on a closed, drained channel watcher = %v, want ErrClosed", err)
	}
	if w.Delivered() != 12 || w.Dropped() != 0 {
		t.Errorf("Delivered() = %d, Dropped() = %d; want 12, 0", w.Delivered(), w.Dropped())
	}
}

// TestChannelWatcherGetsPrefix: a channel watcher made with a prefix gets
// it on the channel, then the values queued before Events was called,
// then later ones; the channel holds the queue length plus the prefix.
func TestChannelWatcherGetsPrefix(t *testing.T) {
	for _, policy := range []broadcast.FullPolicy{broadcast.Block, broadcast.DropNewest, broadcast.DropOldest} {
		t.Run(policy.String(), func(t *testing.T) {
			b := newB[int](t, broadcast.Options{})
			prefix := []int{-3, -2, -1}
			w, err := b.WatchWith(broadcast.WatchOptions{QueueLength: 4, Full: policy, Read: broadcast.ReadChannel}, prefix...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Stop)
			publish(t, b, 0, 1)
			flush(t, b) // 0 and 1 wait in the channel: nothing has read w yet
			ch := w.Events()
			if cap(ch) != 4+len(prefix) {
				t.Errorf("cap(Events()) = %d, want queue length 4 + prefix %d", cap(ch), len(prefix))
			}
			publish(t, b, 2, 3)
			flush(t, b)
			w.Stop()
			var got []int
			for v := range ch {
				got = append(got, v)
			}
			if want := append(slices.Clone(prefix), 0, 1, 2, 3); !slices.Equal(got, want) {
				t.Errorf("channel watcher read %v, want %v", got, want)
			}
			if w.Delivered() != 4 || w.Dropped() != 0 {
				t.Errorf("Delivered() = %d, Dropped() = %d; want 4, 0", w.Delivered(), w.Dropped())
			}
		})
	}
}

// TestChannelWatcherFreesDistributorAsItIsRead: a full Block channel
// watcher, with the distributor waiting for room in it, gets the values
// the distributor holds as its reader makes room.
func TestChannelWatcherFreesDistributorAsItIsRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := broadcast.New[int](broadcast.Options{QueueLength: 1})
		w := watchChanT(t, b)
		publish(t, b, 1, 2, 3)
		synctest.Wait() // 1 in the channel; the distributor waits with 2
		ch := w.Events()
		var got []int
		for range 3 {
			got = append(got, <-ch)
		}
		if !slices.Equal(got, []int{1, 2, 3}) {
			t.Errorf("read %v, want 1 2 3", got)
		}
		w.Stop()
		shutdown(t, b)
	})
}

// TestReadModeNames: each ReadMode names its constant.
func TestReadModeNames(t *testing.T) {
	for m, want := range map[broadcast.ReadMode]string{
		broadcast.ReadQueue: "ReadQueue", broadcast.ReadChannel: "ReadChannel", 7: "ReadMode(7)",
	} {
		if got := m.String(); got != want {
			t.Errorf("ReadMode(%d).String() = %q, want %q", int(m), got, want)
		}
	}
}

// TestChannelPrefixRoom: a channel watcher of QueueLength 2 with
// a prefix of 3 holds 2 published values under DropNewest and DropOldest;
// under Block, as Events documents, the room the prefix leaves once read
// holds published values too: 2 + 3, and no more.
func TestChannelPrefixRoom(t *testing.T) {
	for _, policy := range []broadcast.FullPolicy{broadcast.Block, broadcast.DropNewest, broadcast.DropOldest} {
		t.Run(policy.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := broadcast.New[int](broadcast.Options{})
				w, err := b.WatchWith(broadcast.WatchOptions{QueueLength: 2, Full: policy, Read: broadcast.ReadChannel}, -3, -2, -1)
				if err != nil {
					t.Fatal(err)
				}
				ch := w.Events()
				for range 3 {
					<-ch // the prefix
				}
				publish(t, b, seq(0, 10)...)
				synctest.Wait() // placed what fits; a Block watcher waits for room
				// Delivered also counts what DropOldest discarded.
				want := 2
				if policy == broadcast.Block {
					want = 2 + 3
				}
				if got := len(ch); got != want || (policy != broadcast.DropOldest && w.Delivered() != uint64(want)) {
					t.Errorf("%v watcher of QueueLength 2 with a prefix of 3 holds %d published values (Delivered %d, Dropped %d), want %d",
						policy, got, w.Delivered(), w.Dropped(), want)
				}
				w.Stop()
				shutdown(t, b)
			})
		})
	}
}

// TestConcurrentAllLoopsHandBackLaterFirst: an All loop that ends early
// puts the values it holds back at the front of the queue, in order; with
// two loops on one watcher, as All documents, the values the later one
// hands back go ahead of those of the earlier. Two loops, each holding
// values, that end older-holder first: the next read returns 5, then 2
// and 3.
func TestConcurrentAllLoopsHandBackLaterFirst(t *testing.T) {
	b := newB[int](t, broadcast.Options{})
	w := watchT(t, b)
	publish(t, b, 1, 2, 3)
	flush(t, b)

	// hold runs an All loop that yields one value and then holds the rest
	// until told to break.
	hold := func(held chan<- int, brk <-chan struct{}, done chan<- struct{}) {
		defer close(done)
		for v := range w.All() {
			held <- v
			<-brk
			break
		}
	}
	heldA, brkA, doneA := make(chan int, 1), make(chan struct{}), make(chan struct{})
	go hold(heldA, brkA, doneA)
	if v := <-heldA; v != 1 {
		t.Fatalf("loop A yielded %d first, want 1", v)
	} // A holds 2, 3

	publish(t, b, 4, 5)
	flush(t, b)
	heldB, brkB, doneB := make(chan int, 1), make(chan struct{}), make(chan struct{})
	go hold(heldB, brkB, doneB)
	if v := <-heldB; v != 4 {
		t.Fatalf("loop B yielded %d first, want 4", v)
	} // B holds 5

	close(brkA)
	<-doneA // A put 2, 3 back
	close(brkB)
	<-doneB // B put 5 back

	w.Stop()
	var rest []int
	for v := range w.All() {
		rest = append(rest, v)
	}
	if !slices.Equal(rest, []int{5, 2, 3}) {
		t.Errorf("after both loops ended the watcher reads %v, want 5 2 3 (the later hand-back first)", rest)
	}
}

// TestDropNewestChannelKeepsQueueLengthAfterPrefix: QueueLength "is the capacity of this
// watcher's queue" and the prefix "does not take room in the watcher's
// queue". On channel delivery the prefix's room stays in the channel after
// the prefix is read: a DropNewest watcher of QueueLength 1 with a prefix of
// 5 then holds 6 published values, not 1.
func TestDropNewestChannelKeepsQueueLengthAfterPrefix(t *testing.T) {
	b := newB[int](t, broadcast.Options{})
	w, err := b.WatchWith(broadcast.WatchOptions{QueueLength: 1, Full: broadcast.DropNewest, Read: broadcast.ReadChannel}, -5, -4, -3, -2, -1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	ch := w.Events()
	for range 5 {
		<-ch // the prefix
	}
	publish(t, b, seq(0, 10)...)
	flush(t, b)
	if got := len(ch); got != 1 {
		t.Errorf("watcher of QueueLength 1 holds %d values (Delivered %d, Dropped %d), want 1", got, w.Delivered(), w.Dropped())
	}
}

// TestEventsRacesFirstReadOnQueueWatcher: Events and a first Next (or a
// first All loop) on a fresh queue watcher, started at once from two
// goroutines. Whichever comes first, Events returns a closed channel and
// panics not, and the watcher reads every value once, in order, with no
// race the detector sees.
func TestEventsRacesFirstReadOnQueueWatcher(t *testing.T) {
	b := newB[int](t, broadcast.Options{QueueLength: 8})
	for i := range 300 {
		w := watchT(t, b)
		publish(t, b, 1, 2, 3)
		flush(t, b)
		first := make(chan int, 1)
		var r any
		var closed bool
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			r, closed = eventsPanic(w)
		})
		wg.Go(func() {
			<-start
			if i%2 == 0 {
				v, err := w.Next(context.Background())
				if err != nil {
					t.Errorf("Next() = %v", err)
				}
				first <- v
				return
			}
			for v := range w.All() {
				first <- v
				break
			}
		})
		close(start)
		wg.Wait()
		if r != nil || !closed {
			t.Fatalf("run %d: Events() on a queue watcher panicked with %v, closed %v; want a closed channel", i, r, closed)
		}
		got := []int{<-first}
		publish(t, b, 4)
		flush(t, b)
		w.Stop()
		got = append(got, slices.Collect(w.All())...)
		if !slices.Equal(got, []int{1, 2, 3, 4}) || w.Dropped() != 0 || w.Delivered() != 4 {
			t.Fatalf("run %d: read %v, Dropped %d, Delivered %d; want 1 2 3 4, 0, 4", i, got, w.Dropped(), w.Delivered())
		}
	}
}

// TestEventsWhileNextIsParked: Events on a queue watcher whose first Next
// is parked returns a closed channel, and the parked Next still gets the
// next value.
func TestEventsWhileNextIsParked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := broadcast.New[int](broadcast.Options{})
		w, _ := b.Watch()
		got := make(chan int, 1)
		go func() {
			v, err := w.Next(context.Background())
			if err != nil {
				t.Errorf("Next() = %v", err)
			}
			got <- v
		}()
		synctest.Wait() // Next is parked
		if r, closed := eventsPanic(w); r != nil || !closed {
			t.Errorf("Events() while a first Next is parked: panicked with %v, closed %v; want a closed channel", r, closed)
		}
		publish(t, b, 7)
		if v := <-got; v != 7 {
			t.Errorf("parked Next() = %d, want 7", v)
		}
		w.Stop()
		shutdown(t, b)
	})
}

// TestChannelWatcherConcurrentReaders: on a channel watcher,
// Events receives, Next and All loops from several goroutines at once take
// every value exactly once; each goroutine sees its values in queue order;
// and every reader ends once the watcher is closed. Run for each policy,
// with a prefix.
func TestChannelWatcherConcurrentReaders(t *testing.T) {
	for _, policy := range []broadcast.FullPolicy{broadcast.Block, broadcast.DropNewest, broadcast.DropOldest} {
		t.Run(policy.String(), func(t *testing.T) {
			b := newB[int](t, broadcast.Options{})
			prefix := []int{-3, -2, -1}
			w, err := b.WatchWith(broadcast.WatchOptions{QueueLength: 4, Full: policy, Read: broadcast.ReadChannel}, prefix...)
			if err != nil {
				t.Fatal(err)
			}
			ch := w.Events()
			const n = 3000
			results := make([][]int, 6)
			var wg sync.WaitGroup
			for r := range results {
				wg.Go(func() {
					var got []int
					defer func() { results[r] = got }()
					for i := 0; ; i++ {
						switch (r + i) % 3 {
						case 0:
							v, ok := <-ch
							if !ok {
								return
							}
							got = append(got, v)
						case 1:
							v, err := w.Next(context.Background())
							if errors.Is(err, broadcast.ErrClosed) {
								return
							}
							if err != nil {
								t.Errorf("Next() = %v", err)
								return
							}
							got = append(got, v)
						default:
							k, done := 0, true
							for v := range w.All() {
								got = append(got, v)
								if k++; k == 1+i%5 {
									done = false
									break
								}
							}
							if done {
								return
							}
						}
					}
				})
			}
			for i := range n {
				if err := b.Publish(context.Background(), i); err != nil {
					t.Fatal(err)
				}
			}
			flush(t, b)
			w.Stop()
			wg.Wait()
			seen := map[int]int{}
			read := 0
			for r, got := range results {
				if !slices.IsSorted(got) {
					t.Errorf("reader %d read out of queue order: %v", r, got)
				}
				for _, v := range got {
					seen[v]++
					if v >= 0 {
						read++
					}
				}
			}
			for v, c := range seen {
				if c != 1 {
					t.Errorf("value %d read %d times", v, c)
				}
			}
			for _, v := range prefix {
				if seen[v] != 1 {
					t.Errorf("prefix value %d read %d times", v, seen[v])
				}
			}
			if uint64(read)+w.Dropped() != n {
				t.Errorf("read %d + Dropped %d, published %d", read, w.Dropped(), n)
			}
			if policy != broadcast.DropOldest && w.Delivered() != uint64(read) {
				t.Errorf("Delivered %d, read %d", w.Delivered(), read)
			}
			if policy == broadcast.Block && w.Dropped() != 0 {
				t.Errorf("Block watcher Dropped %d", w.Dropped())
			}
		})
	}
}

// TestStopInsideAllLoop: Stop called in the body of an All loop,
// with the distributor waiting for room in this very Block watcher (and
// values still queued for it), returns; the loop then yields the values
// still queued, in order, and ends; Delivered counts exactly those read,
// nothing is dropped, and a second watcher still gets everything.
func TestStopInsideAllLoop(t *testing.T) {
	for _, channel := range []bool{false, true} {
		name := "queue"
		if channel {
			name = "channel"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := broadcast.New[int](broadcast.Options{QueueLength: 2})
				w, _ := b.WatchWith(broadcast.WatchOptions{Read: readMode(channel)})
				other, _ := b.WatchWith(broadcast.WatchOptions{QueueLength: 64})
				publish(t, b, seq(0, 10)...)
				synctest.Wait() // w holds 0 1; the distributor waits with 2
				var got []int
				for v := range w.All() {
					got = append(got, v)
					if v == 1 {
						w.Stop()
						synctest.Wait()
					}
				}
				if len(got) < 2 || !slices.Equal(got, seq(0, len(got))) {
					t.Errorf("read %v, want 0, 1, ... in order, nothing skipped", got)
				}
				if w.Delivered() != uint64(len(got)) || w.Dropped() != 0 {
					t.Errorf("Delivered %d, Dropped %d; read %d", w.Delivered(), w.Dropped(), len(got))
				}
				if _, err := w.Next(context.Background()); !errors.Is(err, broadcast.ErrClosed) {
					t.Errorf("Next() after the loop = %v, want ErrClosed", err)
				}
				shutdown(t, b)
				if rest := slices.Collect(other.All()); !slices.Equal(rest, seq(0, 10)) {
					t.Errorf("other watcher read %v, want 0..9", rest)
				}
			})
		})
	}
}
