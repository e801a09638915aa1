package natsbridge_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestWatchEventsAfterNextPanics: the first read chooses the read mode; a
// queue watcher (Next first) refuses Events with a panic that says why,
// and its values stay readable.
func TestWatchEventsAfterNextPanics(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "mode.pull", natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{})
	publishAll(t, topic, 1, 3)
	if o, err := w.Next(testCtx(t)); err != nil || o.ID != 1 {
		t.Fatalf("Next = %v, %v; want value 1", o.ID, err)
	}
	func() {
		defer func() {
			r := recover()
			if msg, _ := r.(string); !strings.Contains(msg, "read mode is chosen by its first read") {
				t.Errorf("Events after Next: recovered %v, want a panic naming the read mode", r)
			}
		}()
		w.Events()
	}()
	var got []int
	for o := range w.All() {
		if got = append(got, o.ID); len(got) == 2 {
			break
		}
	}
	if diff := cmp.Diff([]int{2, 3}, got); diff != "" {
		t.Errorf("after the panic, All read (-want +got):\n%s", diff)
	}
}

// TestWatchChannelWatcherStoppedMidLoop: on a channel watcher (Events
// first) Next and All read the channel; an All loop that goes on past
// Stop reads the channel until it closes, then the value the pump held,
// then the queue: every value once, in order.
func TestWatchChannelWatcherStoppedMidLoop(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "mode.channel", natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{})
	const n = 50
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
			// The pump holds the next value and waits to send it.
			eventually(t, "the Events pump parked on its send", func() bool { return parkedIn(").pump(") })
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
