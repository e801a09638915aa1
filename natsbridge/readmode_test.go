package natsbridge_test

import (
	"testing"

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
