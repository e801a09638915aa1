package handle_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/handle"
)

// turnSource is an ackSource whose reader may be fenced and lose its
// turn, as a durable natsbridge watcher's may.
type turnSource struct {
	*ackSource
	mu      sync.Mutex // guards turn, fenced, changed, doneTurn
	turn    uint64
	fenced  bool
	changed chan struct{}
	// doneTurn lists the (seq, turn) pairs DoneTurn was called with.
	doneTurn [][2]uint64
}

func newTurnSource() *turnSource {
	return &turnSource{ackSource: newAckSource(false), turn: 1, changed: make(chan struct{})}
}

func (s *turnSource) Holds(_, turn uint64) (handle.Holding, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case turn != s.turn:
		return handle.Void, nil
	case s.fenced:
		return handle.Fenced, s.changed
	}
	return handle.Held, nil
}

func (s *turnSource) DoneTurn(seq, turn uint64) {
	s.mu.Lock()
	s.doneTurn = append(s.doneTurn, [2]uint64{seq, turn})
	s.mu.Unlock()
	s.Done(seq)
}

// set fences the reader, or ends its fence, in turn.
func (s *turnSource) set(fenced bool, turn uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fenced, s.turn = fenced, turn
	close(s.changed)
	s.changed = make(chan struct{})
}

// TestTurnSourceFencedValuesWaitThenGoOnOrAreVoid: a Pool begins no value
// of a TurnSource while its reader is fenced; if the reader resumes in
// the same turn, the values it held are handled, in order; if a later
// turn began, they are not handled, not marked done, and counted Voided
// (and Abandoned); a value handed out in the new turn is handled and
// marked done with its turn.
func TestTurnSourceFencedValuesWaitThenGoOnOrAreVoid(t *testing.T) {
	for _, resume := range []bool{true, false} {
		name := map[bool]string{true: "resumed", false: "taken-over"}[resume]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := newTurnSource()
				release := make(chan struct{})
				var mu sync.Mutex
				var handled []int
				var begun atomic.Int32
				p := handle.New[job, int](src, byKey, func(_ context.Context, j job) error {
					begun.Add(1)
					if j.ID == 0 {
						<-release // in its handler when the reader is fenced
					}
					mu.Lock()
					handled = append(handled, j.ID)
					mu.Unlock()
					return nil
				}, handle.Options{Workers: 2, Logger: quiet})
				defer p.Shutdown(context.Background())
				for i := range 4 { // key 0: 0 1 2 3, the last three behind the first
					src.in <- handle.Delivery[job]{Value: job{Key: 0, N: i, ID: i}, Seq: uint64(i + 1), Attempt: 1, Turn: 1}
				}
				synctest.Wait()
				src.set(true, 1) // fenced: its lease ran out
				close(release)   // value 0's handler returns: a running handler finishes
				time.Sleep(time.Minute)
				synctest.Wait()
				if n := begun.Load(); n != 1 {
					t.Fatalf("%d handlers begun while the reader was fenced, want only value 0's, begun before", n)
				}
				if resume {
					src.set(false, 1)
				} else {
					src.set(false, 2)
					src.in <- handle.Delivery[job]{Value: job{Key: 0, N: 1, ID: 1}, Seq: 2, Attempt: 2, Turn: 2} // comes again
				}
				synctest.Wait() // the Pool received it
				if err := p.Flush(context.Background()); err != nil {
					t.Fatal(err)
				}
				s := p.Stats()
				checkConserved(t, s)
				want, wantDone, voided := []int{0, 1, 2, 3}, [][2]uint64{{1, 1}, {2, 1}, {3, 1}, {4, 1}}, uint64(0)
				if !resume {
					want, wantDone, voided = []int{0, 1}, [][2]uint64{{1, 1}, {2, 2}}, 3
				}
				mu.Lock()
				got := slices.Clone(handled)
				mu.Unlock()
				src.mu.Lock()
				done := slices.Clone(src.doneTurn)
				src.mu.Unlock()
				if !slices.Equal(got, want) || !slices.Equal(done, wantDone) || s.Voided != voided || s.Abandoned != voided {
					t.Errorf("handled %v, DoneTurn %v, Voided %d, Abandoned %d; want %v, %v, %d, %d", got, done, s.Voided, s.Abandoned, want, wantDone, voided, voided)
				}
			})
		})
	}
}

// TestTurnSourceShutdownWhileFencedAbandons: a Shutdown while values wait
// for their fenced reader returns; those values are abandoned, never
// begun nor marked done.
func TestTurnSourceShutdownWhileFencedAbandons(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newTurnSource()
		var begun atomic.Int32
		p := handle.New[job, int](src, byKey, func(context.Context, job) error {
			begun.Add(1)
			return nil
		}, handle.Options{Workers: 2, Logger: quiet})
		src.set(true, 1)
		for i := range 4 {
			src.in <- handle.Delivery[job]{Value: job{Key: i % 2, N: i / 2, ID: i}, Seq: uint64(i + 1), Attempt: 1, Turn: 1}
		}
		synctest.Wait()
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		s := p.Stats()
		checkConserved(t, s)
		if begun.Load() != 0 || s.Abandoned != 4 || s.Voided != 0 || len(src.doneSeqs()) != 0 {
			t.Errorf("begun %d, Stats %+v, done %v; want none begun, 4 abandoned (not voided), none done", begun.Load(), s, src.doneSeqs())
		}
	})
}

// TestTurnSourceValueTakenOverIsNotDeadLettered: a value whose handler
// fails for the last time after another reader took its position over is
// not dead-lettered here (that reader handles it again): counted Voided
// and Abandoned, not marked done. If its reader resumes in its turn, it is
// dead-lettered.
func TestTurnSourceValueTakenOverIsNotDeadLettered(t *testing.T) {
	for _, resume := range []bool{true, false} {
		t.Run(map[bool]string{true: "resumed", false: "taken-over"}[resume], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := newTurnSource()
				src.keep = true
				release := make(chan struct{})
				p := handle.New[job, int](src, byKey, func(context.Context, job) error {
					<-release
					return errors.New("failed")
				}, handle.Options{Workers: 1, MaxAttempts: 1, Logger: quiet})
				defer p.Shutdown(context.Background())
				src.in <- handle.Delivery[job]{Value: job{ID: 0}, Seq: 1, Attempt: 1, Turn: 1}
				synctest.Wait()
				src.set(true, 1) // fenced while the handler runs
				close(release)
				synctest.Wait()
				if resume {
					src.set(false, 1)
				} else {
					src.set(false, 2)
				}
				if err := p.Flush(context.Background()); err != nil {
					t.Fatal(err)
				}
				s := p.Stats()
				checkConserved(t, s)
				src.mu.Lock()
				dead := len(src.dead)
				src.mu.Unlock()
				want := handle.Stats[int]{Received: 1, DeadLettered: 1}
				wantDead := 1
				if !resume {
					want, wantDead = handle.Stats[int]{Received: 1, Abandoned: 1, Voided: 1}, 0
				}
				if s.DeadLettered != want.DeadLettered || s.Abandoned != want.Abandoned || s.Voided != want.Voided || dead != wantDead {
					t.Errorf("Stats %+v, %d dead letters stored; want DeadLettered %d, Abandoned %d, Voided %d, %d stored", s, dead, want.DeadLettered, want.Abandoned, want.Voided, wantDead)
				}
				if done := src.doneSeqs(); !resume && len(done) != 0 {
					t.Errorf("marked done %v: a value taken over is not this reader's to mark", done)
				}
			})
		})
	}
}

// TestTurnSourceRetryNotMadeIsNotARetry: a value waiting out a retry when
// another reader takes its position over is given up when its retry is
// due, without an attempt: Retries counts none.
func TestTurnSourceRetryNotMadeIsNotARetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newTurnSource()
		attempts := 0
		p := handle.New[job, int](src, byKey, func(context.Context, job) error {
			attempts++
			return errors.New("failed")
		}, handle.Options{Workers: 1, MaxAttempts: 3, RetryMin: time.Second, RetryMax: time.Second, Logger: quiet})
		defer p.Shutdown(context.Background())
		src.in <- handle.Delivery[job]{Value: job{ID: 0}, Seq: 1, Attempt: 1, Turn: 1}
		synctest.Wait() // failed once, waiting out its retry
		src.set(true, 1)
		time.Sleep(2 * time.Second) // the retry due: it waits, fenced
		synctest.Wait()
		fenced := p.Stats().Retries
		src.set(false, 2)
		if err := p.Flush(minute(t)); err != nil {
			t.Fatal(err)
		}
		s := p.Stats()
		checkConserved(t, s)
		if attempts != 1 || fenced != 0 || s.Retries != 0 || s.Voided != 1 {
			t.Errorf("%d attempts, Retries %d while fenced, Stats %+v: want 1 attempt, 0 Retries throughout (a counter never goes down), 1 Voided", attempts, fenced, s)
		}
	})
}
