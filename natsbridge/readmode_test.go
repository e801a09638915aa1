package natsbridge_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestWatchEventsOnQueueWatcher: a queue watcher (the default read mode)
// does not offer Events: it returns a closed channel, never panics, and
// the watcher's values stay readable with Next and All.
func TestWatchEventsOnQueueWatcher(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "mode.pull", natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{})
	publishAll(t, topic, 1, 3)
	if o, err := w.Next(testCtx(t)); err != nil || o.ID != 1 {
		t.Fatalf("Next = %v, %v; want value 1", o.ID, err)
	}
	if v, ok := <-w.Events(); ok {
		t.Errorf("Events on a queue watcher gave %v, want a closed channel", v)
	}
	var got []int
	for o := range w.All() {
		if got = append(got, o.ID); len(got) == 2 {
			break
		}
	}
	if diff := cmp.Diff([]int{2, 3}, got); diff != "" {
		t.Errorf("after Events, All read (-want +got):\n%s", diff)
	}
}

// TestWatchChannelWatcherStoppedMidLoop: on a channel watcher
// (broadcast.ReadChannel) Next and All read the channel; an All loop that
// goes on past Stop reads the channel until it closes: every value once,
// in order.
func TestWatchChannelWatcherStoppedMidLoop(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "mode.channel", natsbridge.TopicOptions{})
	const n = 50
	w := watch(t, topic, natsbridge.WatchOptions{Read: broadcast.ReadChannel, QueueLength: n})
	publishAll(t, topic, 1, n)
	if err := w.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	ch := w.Events()
	got := []int{(<-ch).ID}
	o, err := w.Next(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, o.ID)
	for o := range w.All() {
		if got = append(got, o.ID); len(got) == 10 {
			w.Stop()
		}
	}
	if diff := cmp.Diff(span(1, n), got); diff != "" {
		t.Errorf("values read across the Stop (-want +got):\n%s", diff)
	}
	if w.Seq() != n {
		t.Errorf("Seq() = %d, want %d", w.Seq(), n)
	}
}

// TestChannelWatcherEventsNextRace: on a channel watcher, Events and
// Next race as first reads: neither panics, every value is read exactly
// once, in order, and Seq is the last value's once Stop has returned.
func TestChannelWatcherEventsNextRace(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "h2race", natsbridge.TopicOptions{})
	const n = 30
	publishAll(t, topic, 1, n)
	for iter := range 15 {
		w, err := topic.Watch(testCtx(t), natsbridge.WatchOptions{From: 1, Read: broadcast.ReadChannel})
		if err != nil {
			t.Fatal(err)
		}
		var (
			wg       sync.WaitGroup
			ch       <-chan Order
			panicked bool
			first    Order
			nextErr  error
		)
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			defer func() {
				if recover() != nil {
					panicked = true
				}
			}()
			ch = w.Events()
		})
		wg.Go(func() {
			<-start
			first, nextErr = w.Next(testCtx(t))
		})
		close(start)
		wg.Wait()
		if nextErr != nil {
			t.Fatalf("iter %d: Next: %v", iter, nextErr)
		}
		got := []Order{first}
		if !panicked {
			timeout := time.After(30 * time.Second)
			for len(got) < n {
				select {
				case v := <-ch:
					got = append(got, v)
				case <-timeout:
					t.Fatalf("iter %d: channel gave %d of %d", iter, len(got), n)
				}
			}
		} else {
			got = append(got, take(t, w, n-1)...)
		}
		w.Stop()
		got = append(got, drain(t, w)...)
		if want := span(1, n); !slices.Equal(ids(got), want) {
			t.Fatalf("iter %d (events panicked %v): read %v, want %v", iter, panicked, ids(got), want)
		}
		if w.Seq() != n {
			t.Fatalf("iter %d: Seq %d after Stop, want %d", iter, w.Seq(), n)
		}
	}
}

// TestChannelWatcherStopMidAll: Stop while All reads a channel
// watcher. All ends, every value it yielded is yielded once and in order,
// and a watcher resumed at Seq()+1 reads the rest: nothing lost.
func TestChannelWatcherStopMidAll(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "h2stopall", natsbridge.TopicOptions{})
	const n = 200
	publishAll(t, topic, 1, n)
	for iter := range 10 {
		w, err := topic.Watch(testCtx(t), natsbridge.WatchOptions{From: 1, QueueLength: 8})
		if err != nil {
			t.Fatal(err)
		}
		_ = w.Events()
		var got []Order
		stopAt := 5 + iter*7
		var stopped sync.WaitGroup
		done := make(chan struct{})
		go func() {
			defer close(done)
			for v := range w.All() {
				got = append(got, v)
				if len(got) == stopAt {
					stopped.Go(w.Stop)
				}
			}
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("iter %d: All did not end after Stop (read %d)", iter, len(got))
		}
		stopped.Wait()
		if want := span(1, len(got)); !slices.Equal(ids(got), want) {
			t.Fatalf("iter %d: All yielded %v", iter, ids(got))
		}
		if w.Seq() != uint64(len(got)) {
			t.Fatalf("iter %d: Seq %d after All of %d values", iter, w.Seq(), len(got))
		}
		r := watch(t, topic, natsbridge.WatchOptions{From: w.Seq() + 1})
		if len(got) < n {
			rest := take(t, r, n-len(got))
			if want := span(len(got)+1, n); !slices.Equal(ids(rest), want) {
				t.Fatalf("iter %d: resumed watcher read %v, want %v", iter, ids(rest), want)
			}
		}
		r.Stop()
	}
}
