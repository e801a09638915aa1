package broadcast_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/broadcast"
)

// The tests in this file are attacks on the package's documented promises.
// Each names the sentence it holds the code to; a failure is a break.

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

// TestHostileFlushNilAfterShutdownDropped: Flush "returns once every value
// queued before the call has been placed in, or by its policy dropped
// from, the queue of every watcher registered before the call", and
// Delivered "After Broadcaster.Flush returns, ... counts every value queued
// before the call that this watcher's policy did not skip". A Flush that
// is waiting when a Shutdown's context ends returns nil although a value
// queued before it was neither placed nor skipped by a policy: it was
// abandoned by the Shutdown.
func TestHostileFlushNilAfterShutdownDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := broadcast.New[int](broadcast.Options{QueueLength: 1}) // Block
		w, _ := b.Watch()
		publish(t, b, 1, 2) // 2 waits for room that never comes
		flushed := make(chan error, 1)
		go func() { flushed <- b.Flush(context.Background()) }()
		synctest.Wait() // Flush's marker is queued behind 2
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := b.Shutdown(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Shutdown() = %v, want Canceled", err)
		}
		err := <-flushed
		if err == nil && w.Delivered() != 2 {
			t.Errorf("Flush() = nil, but Delivered() = %d, Dropped() = %d (by Shutdown, not by policy): value 2, queued before Flush, was never placed",
				w.Delivered(), w.Dropped())
		}
	})
}

// TestHostilePrefixEnlargesTheQueue: QueueLength "is the capacity of this
// watcher's queue" and the prefix "does not take room in the watcher's
// queue". On channel delivery the prefix's room stays in the channel after
// the prefix is read: a DropNewest watcher of QueueLength 1 with a prefix of
// 5 then holds 6 published values, not 1.
func TestHostilePrefixEnlargesTheQueue(t *testing.T) {
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

func flush[T any](t *testing.T, b *broadcast.Broadcaster[T]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	if err := b.Flush(ctx); err != nil {
		t.Fatalf("Flush() = %v", err)
	}
}

// TestShutdownFromReaderEndsWithItsContext: called from the only reader of
// a full Block watcher, Shutdown cannot flush (its caller is the one who
// must make room); as its doc says, it returns when its context ends, and
// the values that reader missed are counted.
func TestShutdownFromReaderEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := broadcast.New[int](broadcast.Options{QueueLength: 1}) // Block
		w, _ := b.Watch()
		publish(t, b, 1, 2, 3)
		returned := make(chan error, 1)
		go func() {
			for range w.All() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				returned <- b.Shutdown(ctx) // e.g. on a fatal value
				return
			}
		}()
		if err := <-returned; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown() = %v, want DeadlineExceeded", err)
		}
		if w.Dropped() != 1 {
			t.Errorf("Dropped() = %d, want 1 (value 3: 2 waits in the queue)", w.Dropped())
		}
	})
}

// TestFlushFromReaderEndsWithItsContext: as its doc says, Flush called
// from the only reader of a full Block watcher waits for room that reader
// cannot make: it returns when its context ends, and nothing is lost.
func TestFlushFromReaderEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newB[int](t, broadcast.Options{QueueLength: 1}) // Block
		w, _ := b.Watch()
		publish(t, b, 1, 2, 3)
		returned := make(chan error, 1)
		var got []int
		go func() {
			for v := range w.All() {
				got = append(got, v)
				if v == 1 {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					returned <- b.Flush(ctx)
					cancel()
				}
				if v == 3 {
					w.Stop()
				}
			}
			close(returned)
		}()
		if err := <-returned; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Flush() = %v, want DeadlineExceeded", err)
		}
		<-returned
		if want := []int{1, 2, 3}; !slices.Equal(got, want) || w.Dropped() != 0 {
			t.Errorf("read %v, Dropped() = %d; want %v, 0", got, w.Dropped(), want)
		}
	})
}
