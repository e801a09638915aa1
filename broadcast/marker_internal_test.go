package broadcast

import (
	"context"
	"sync"
	"testing"
)

// TestMarkerRunsAtItsPosition queues markers between concurrent publishers
// and checks, from inside each marker, that the values before its
// position, and only those, have been placed in a watcher's queue.
func TestMarkerRunsAtItsPosition(t *testing.T) {
	b := New[int](Options{QueueLength: 1 << 16, IncomingQueueLength: 4})
	defer b.Shutdown(context.Background())
	w, _ := b.Watch()
	defer w.Stop()
	if err := b.Flush(context.Background()); err != nil { // w is active from position 0
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 5000 {
				b.Publish(context.Background(), i)
			}
		})
	}
	type check struct{ pos, placed uint64 }
	checks := make(chan check, 200)
	for range 200 {
		b.mu.Lock()
		pos := b.enqueued
		b.queueMarkerLocked(marker[int]{run: func() { checks <- check{pos, w.Delivered()} }})
		b.mu.Unlock()
	}
	wg.Wait()
	if err := b.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(checks)
	for c := range checks {
		if c.placed != c.pos {
			t.Fatalf("marker at position %d ran with %d values placed, want exactly %d", c.pos, c.placed, c.pos)
		}
	}
}

// TestWatchersStoppedBeforeRegistrationAreReleased: while the distributor
// is held up by a full Block watcher, watchers registered and stopped
// before their markers are reached leave nothing behind but a bounded list
// of markers.
func TestWatchersStoppedBeforeRegistrationAreReleased(t *testing.T) {
	b := New[int](Options{QueueLength: 1})
	stuck, _ := b.Watch()
	b.Publish(context.Background(), 1)
	b.Publish(context.Background(), 2) // the distributor now waits for stuck
	for range 20000 {
		w, err := b.Watch()
		if err != nil {
			t.Fatal(err)
		}
		w.Stop()
	}
	b.mu.Lock()
	n := len(b.marks)
	b.mu.Unlock()
	if n > 200 {
		t.Errorf("%d markers kept for 20000 stopped watchers, want a bounded few", n)
	}
	if got := b.Stats().Watchers; got != 1 {
		t.Errorf("Stats().Watchers = %d, want 1", got)
	}
	stuck.Stop()
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
