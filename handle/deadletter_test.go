package handle_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/handle"
)

// TestPoisonAndKeyPanic: a value its source could not decode, and one
// whose key function panics, are dead letters before any handler runs,
// counted as received and dead-lettered (the first as poisoned too), and
// marked done.
func TestPoisonAndKeyPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newAckSource(false)
		ran := 0
		key := func(j job) int {
			if j.ID == 2 {
				panic("no key")
			}
			return j.Key
		}
		p := handle.New[job, int](src, key, func(context.Context, job) error { ran++; return nil }, handle.Options{Logger: quiet})
		defer p.Shutdown(context.Background())
		src.in <- handle.Delivery[job]{Seq: 1, Attempt: 1, Err: errors.New("bad json")}
		src.in <- handle.Delivery[job]{Value: job{ID: 2}, Seq: 2, Attempt: 1}
		src.in <- handle.Delivery[job]{Value: job{ID: 3}, Seq: 3, Attempt: 1}
		for range 2 {
			d, err := p.DeadLetters().Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if d.Err == nil || d.Attempts != 0 || d.First.IsZero() {
				t.Errorf("dead letter %+v: want the decoding or key error, no attempt, its time", d)
			}
		}
		for p.Stats().Handled < 1 {
			time.Sleep(time.Millisecond)
		}
		s := p.Stats()
		checkConserved(t, s)
		if s.Received != 3 || s.DeadLettered != 2 || s.Poisoned != 1 || ran != 1 {
			t.Errorf("Stats %+v, handler ran %d; want 3 received, 2 dead-lettered, 1 poisoned, 1 run", s, ran)
		}
		if got := src.doneSeqs(); len(got) != 3 {
			t.Errorf("marked done %v, want all three", got)
		}
	})
}

// TestSourceKeepsDeadLetters: a source that keeps dead letters (a
// natsbridge watcher with a dead-letter topic) gets them, with why, and
// Pool.DeadLetters gets none; the value is marked done after.
func TestSourceKeepsDeadLetters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newAckSource(true)
		p := handle.New[job, int](src, byKey, func(context.Context, job) error { return handle.Permanent(errors.New("no")) }, handle.Options{Logger: quiet})
		src.in <- handle.Delivery[job]{Value: job{ID: 1}, Seq: 7, Attempt: 1}
		for p.Stats().DeadLettered < 1 {
			time.Sleep(time.Millisecond)
		}
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		src.mu.Lock()
		f, ok := src.dead[7]
		src.mu.Unlock()
		if !ok || f.Attempts != 1 || !errors.Is(f.Err, handle.ErrPermanent) {
			t.Errorf("the source kept %+v (%v), want the failure of seq 7", f, ok)
		}
		if _, err := p.DeadLetters().Next(context.Background()); err == nil {
			t.Error("Pool.DeadLetters got a dead letter the source kept")
		}
		if got := src.doneSeqs(); len(got) != 1 || got[0] != 7 {
			t.Errorf("marked done %v, want [7]", got)
		}
	})
}

// TestDeadLettersFullWaits: with nobody reading DeadLetters, a full
// dead-letter queue holds the failed value's key (it is in flight, its
// key's later values behind it) while other keys go on; reading the dead
// letters lets them go.
func TestDeadLettersFullWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		p := handle.New(w, byKey, func(ctx context.Context, j job) error {
			if j.Key == 0 {
				return handle.Permanent(errors.New("no"))
			}
			return nil
		}, handle.Options{DeadLetterQueue: 1, Logger: quiet})
		defer p.Shutdown(context.Background())
		const n = 10
		js := jobs(n, 1) // key 0
		publish(t, b, append(js, job{Key: 1, ID: n}))
		synctest.Wait()
		s := p.Stats()
		if s.DeadLettered >= n-1 || s.InFlight != 1 || s.Handled != 1 || s.Waiting == 0 {
			t.Errorf("Stats %+v, want a few dead letters queued, 1 waiting for room, the rest of key 0 behind it, key 1 handled", s)
		}
		for range n {
			if _, err := p.DeadLetters().Next(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if s := p.Stats(); s.DeadLettered != n {
			t.Errorf("DeadLettered %d, want %d", s.DeadLettered, n)
		}
	})
}

// TestDeadLettersStoppedHoldsTheRest: dead letters given up after
// DeadLetters was stopped go nowhere, so they are not counted
// dead-lettered nor marked done: their keys wait, and Shutdown abandons
// them, to be handed out again by a durable source. Counted dead-lettered
// and marked done, they were lost without a trace.
func TestDeadLettersStoppedHoldsTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newAckSource(false)
		p := handle.New[job, int](src, byKey, func(context.Context, job) error {
			return handle.Permanent(errors.New("no"))
		}, handle.Options{Workers: 4, DeadLetterQueue: 1, Logger: quiet})
		const n = 20
		for i := range n {
			src.in <- handle.Delivery[job]{Value: job{Key: i % 5, ID: i}, Seq: uint64(i + 1), Attempt: 1}
		}
		var read uint64
		for range p.DeadLetters().All() {
			if read++; read == 3 {
				p.DeadLetters().Stop() // the queued ones are still read
			}
		}
		synctest.Wait()
		if s := p.Stats(); s.DeadLettered != read || int(s.Received-s.DeadLettered) != s.InFlight+s.Waiting+s.Backoff {
			t.Errorf("DeadLetters stopped after %d read: Stats %+v, want %d dead-lettered and the rest held", read, s, read)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown = %v, want nil (the held dead letters wait to be stored again, in no handler)", err)
		}
		if err := p.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		s := p.Stats()
		checkConserved(t, s)
		if s.DeadLettered != read || s.Abandoned != s.Received-read {
			t.Errorf("Stats %+v after Shutdown, want %d dead-lettered, the rest abandoned", s, read)
		}
		if done := uint64(len(src.doneSeqs())); done != read {
			t.Errorf("%d values marked done, %d dead letters read", done, read)
		}
	})
}

// TestDeadLettersStoppedPoisonEndsAtShutdown: a value its source could not
// decode, given up by the reader after DeadLetters was stopped, holds the
// reading until Shutdown, which abandons it at once (not marked done)
// rather than waiting out its ctx for a reader that retries for ever.
func TestDeadLettersStoppedPoisonEndsAtShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newAckSource(false)
		p := handle.New[job, int](src, byKey, func(context.Context, job) error { return nil },
			handle.Options{Logger: quiet})
		p.DeadLetters().Stop()
		src.in <- handle.Delivery[job]{Err: errors.New("undecodable"), Seq: 1, Attempt: 1}
		src.in <- handle.Delivery[job]{Value: job{Key: 1, ID: 2}, Seq: 2, Attempt: 1}
		synctest.Wait()
		if s := p.Stats(); s.Received != 1 || s.InFlight != 1 {
			t.Errorf("Stats %+v, want the poison value received and held, the next one not read", s)
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil || time.Since(start) > time.Minute {
			t.Errorf("Shutdown = %v after %v, want nil at once", err, time.Since(start))
		}
		s := p.Stats()
		checkConserved(t, s)
		if s.Abandoned != 1 || s.DeadLettered != 0 || len(src.doneSeqs()) != 0 {
			t.Errorf("Stats %+v, marked done %v; want the poison value abandoned, not done", s, src.doneSeqs())
		}
	})
}
