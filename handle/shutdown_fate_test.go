package handle_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/handle"
)

// lateSource is a Source whose Next waits for its ctx to end and then
// returns a value anyway, once: a broadcast.Watcher does so when a value
// is queued just as Shutdown ends the Pool's read ("a queued value wins
// over an ended ctx").
type lateSource struct {
	reading chan struct{} // closed when Next is first called
	given   bool
}

func (s *lateSource) Next(ctx context.Context) (job, error) {
	if s.given {
		<-ctx.Done()
		return job{}, ctx.Err()
	}
	close(s.reading)
	<-ctx.Done()
	s.given = true
	return job{Key: 1, ID: 1}, nil
}

// TestShutdownGivesAValueReceivedAsItBeginsAFate: a value the source hands
// out while Shutdown begins is received, so it gets a fate (abandoned, or
// handled): it is not left Waiting for a worker that no longer comes, and
// Flush does not wait for it forever.
func TestShutdownGivesAValueReceivedAsItBeginsAFate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &lateSource{reading: make(chan struct{})}
		p := handle.New[job, int](src, byKey, func(context.Context, job) error { return nil }, handle.Options{Logger: quiet})
		<-src.reading
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		s := p.Stats()
		checkConserved(t, s)
		if s.Received != 1 || s.Waiting != 0 || s.InFlight != 0 || s.Handled+s.Abandoned != 1 {
			t.Errorf("after Shutdown: %+v; want the value received and abandoned (or handled), none waiting", s)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Flush(ctx); err != nil {
			t.Errorf("Flush after Shutdown = %v: a received value never got its fate", err)
		}
	})
}

// TestShutdownKeepsTheDeadLettersItCounted: every value counted
// DeadLettered is read from Pool.DeadLetters after a Shutdown whose ctx
// ended while nobody read them (a full dead-letter queue): a dead letter
// is counted, and its value marked done, only if it is not lost.
func TestShutdownKeepsTheDeadLettersItCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newAckSource(false)
		p := handle.New[job, int](src, byKey, func(context.Context, job) error {
			return handle.Permanent(errors.New("no"))
		}, handle.Options{Workers: 4, DeadLetterQueue: 1, Logger: quiet})
		for i := range 8 {
			src.in <- handle.Delivery[job]{Value: job{Key: i, ID: i}, Seq: uint64(i + 1), Attempt: 1}
		}
		synctest.Wait() // the dead-letter queue full, workers waiting for room
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown = %v, want DeadlineExceeded (nobody reads the dead letters)", err)
		}
		synctest.Wait()
		s := p.Stats()
		checkConserved(t, s)
		var read uint64
		for range p.DeadLetters().All() {
			read++
		}
		if read != s.DeadLettered {
			t.Errorf("DeadLetters gave %d dead letters, Stats counts %d DeadLettered: a counted dead letter was lost", read, s.DeadLettered)
		}
		if got := uint64(len(src.doneSeqs())); got != read {
			t.Errorf("%d values marked done, %d dead letters kept: a value acknowledged without its dead letter", got, read)
		}
	})
}

// TestShutdownMarksDoneOnlyPoisonKept: values the source could not
// decode, dead-lettered by the reader, are marked done only if their dead
// letter is kept: with the dead-letter queue full and nobody reading it,
// the one waiting for room when Shutdown's ctx ends is dropped, counted
// abandoned, and not marked done, so that a durable source hands it out
// again.
func TestShutdownMarksDoneOnlyPoisonKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newAckSource(false)
		p := handle.New[job, int](src, byKey, func(context.Context, job) error { return nil },
			handle.Options{Workers: 1, DeadLetterQueue: 1, Logger: quiet})
		for i := range 3 {
			src.in <- handle.Delivery[job]{Err: errors.New("undecodable"), Seq: uint64(i + 1), Attempt: 1}
		}
		synctest.Wait() // one dead letter queued, the reader waiting for room for the next
		now, cancel := context.WithCancel(context.Background())
		cancel()
		_ = p.Shutdown(now)
		if err := p.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		s := p.Stats()
		checkConserved(t, s)
		var read uint64
		for range p.DeadLetters().All() {
			read++
		}
		if read != s.DeadLettered || read != 1 {
			t.Errorf("DeadLetters gave %d dead letters, Stats counts %d DeadLettered; want 1 and 1 (%+v)", read, s.DeadLettered, s)
		}
		if done := src.doneSeqs(); len(done) != 1 || done[0] != 1 {
			t.Errorf("marked done %v, want [1]: only the dead letter kept", done)
		}
	})
}

// TestShutdownCountsADeadLetterAsDeadLettersGetsIt: a dead letter
// published to DeadLetters but not yet in its queue when Shutdown runs out
// of time is counted dead-lettered if it reaches the queue after all (a
// reader made room), abandoned if it is dropped: never both. The reader of
// DeadLetters starts at varying moments around the Shutdown's end, so that
// both happen over the rounds; without the count taken from the dead-letter
// broadcaster's drops, 10 of 60 rounds counted abandoned a dead letter
// that was read.
func TestShutdownCountsADeadLetterAsDeadLettersGetsIt(t *testing.T) {
	for round := range 60 {
		b, w := source(t)
		p := handle.New(w, byKey, func(context.Context, job) error { return handle.ErrPermanent },
			handle.Options{Workers: 4, QueueLength: 20, DeadLetterQueue: 1, Logger: quiet})
		publish(t, b, jobs(50, 10))
		for deadline := time.Now().Add(10 * time.Second); p.Stats().InFlight < 4; runtime.Gosched() {
			if time.Now().After(deadline) { // one dead letter queued, the others waiting for room
				t.Fatalf("round %d: 4 workers not dead-lettering after 10 s: %+v", round, p.Stats())
			}
		}
		var read atomic.Uint64
		start := make(chan struct{})
		readDone := make(chan struct{})
		go func() {
			defer close(readDone)
			<-start
			for range p.DeadLetters().All() {
				read.Add(1)
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(1+round%4)*time.Millisecond)
		// Not a synchronisation: the reader's start moves around the
		// Shutdown's end from round to round.
		time.AfterFunc(time.Duration(round%7)*300*time.Microsecond, func() { close(start) })
		err := p.Shutdown(ctx)
		cancel()
		<-readDone
		// Workers still storing dead letters as Shutdown returned count
		// their values' fates as they return: Flush waits for them.
		fctx, fcancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := p.Flush(fctx); err != nil {
			t.Fatalf("round %d: Flush after Shutdown: %v (%+v)", round, err, p.Stats())
		}
		fcancel()
		s := p.Stats()
		checkConserved(t, s)
		if s.DeadLettered != read.Load() {
			t.Errorf("round %d (Shutdown: %v): DeadLettered %d, read from DeadLetters %d (%+v)", round, err, s.DeadLettered, read.Load(), s)
		}
		if held := s.InFlight + s.Waiting + s.Backoff; held != 0 {
			t.Errorf("round %d: %d values held after Shutdown (%+v)", round, held, s)
		}
	}
}

// TestFlushRacingShutdown: a Flush that waits for a handler which ignores
// its ctx goes on waiting through a Shutdown that ran out of time, and
// returns once that handler returns and its value has its fate; one made
// after Shutdown returns at once if nothing is held.
func TestFlushRacingShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		release := make(chan struct{})
		p := handle.New(w, byKey, func(ctx context.Context, j job) error {
			if j.ID == 0 {
				<-release // ignores ctx
			}
			return nil
		}, handle.Options{Logger: quiet})
		publish(t, b, []job{{Key: 0, ID: 0}, {Key: 0, N: 1, ID: 1}, {Key: 1, ID: 2}})
		synctest.Wait()
		flushed := make(chan error, 1)
		go func() { flushed <- p.Flush(context.Background()) }()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown = %v, want DeadlineExceeded", err)
		}
		synctest.Wait()
		select {
		case err := <-flushed:
			t.Fatalf("Flush returned %v while a value it waits for was in its handler", err)
		default:
		}
		close(release)
		if err := <-flushed; err != nil {
			t.Errorf("Flush = %v once the handler returned", err)
		}
		s := p.Stats()
		checkConserved(t, s)
		if s.Handled != 2 || s.Abandoned != 1 || s.InFlight != 0 {
			t.Errorf("Stats %+v; want 0 and 2 handled, 1 abandoned", s)
		}
		if err := p.Flush(context.Background()); err != nil {
			t.Errorf("a Flush after everything has its fate = %v", err)
		}
	})
}

// TestWindowPausesReading: with one key's value held in its handler,
// reading goes on for the other keys until Window values were received
// from the held one on, then pauses (Stats().Paused), and goes on once
// the held value has its fate.
func TestWindowPausesReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _, p, release := heldPool(t, func(j job) bool { return j.ID == 0 }, handle.Options{Workers: 4, Window: 10})
		defer p.Shutdown(context.Background())
		js := []job{{Key: 0, ID: 0}}
		for i := 1; i < 30; i++ {
			js = append(js, job{Key: i, ID: i})
		}
		publish(t, b, js)
		synctest.Wait()
		s := p.Stats()
		checkConserved(t, s)
		if s.Received != 10 || !s.Paused || s.Handled != 9 {
			t.Errorf("with value 0 held: %+v; want 10 received (the window), 9 handled, paused", s)
		}
		close(release)
		synctest.Wait()
		if s := p.Stats(); s.Received != 30 || s.Handled != 30 || s.Paused {
			t.Errorf("once released: %+v; want all 30 handled", s)
		}
	})
}
