package handle_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldgo/herald/handle"
)

// TestBlockedNamesTheOldestHeldKey: Stats().Blocked names the key whose
// oldest value began first and has no fate yet, whether it waits out a
// retry or is in a handler; and the slow-key log, once keys were held
// past SlowKey, names that oldest key first.
func TestBlockedNamesTheOldestHeldKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var logs bytes.Buffer
		var failing atomic.Bool
		failing.Store(true)
		b, w := source(t)
		release := make(chan struct{})
		p := handle.New(w, byKey, func(_ context.Context, j job) error {
			if j.Key == 2 {
				if failing.Load() {
					return errors.New("not yet") // waits out a retry of 10 to 20s
				}
				return nil
			}
			<-release
			return nil
		}, handle.Options{Workers: 4, RetryMin: 20 * time.Second, RetryMax: 20 * time.Second, SlowKey: 5 * time.Second,
			Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
		defer p.Shutdown(context.Background())
		publish(t, b, []job{{Key: 2}}) // begins first, fails
		synctest.Wait()
		publish(t, b, []job{{Key: 1, ID: 1}, {Key: 1, N: 1, ID: 2}}) // the first held in its handler
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if s := p.Stats().Blocked; s == nil || s.Key != 2 || s.Attempts != 1 || s.For != 3*time.Second || s.Behind != 0 {
			t.Errorf("Blocked %+v, want key 2 (waiting out its retry, begun first) for 3s, 1 attempt, none behind", s)
		}
		time.Sleep(3 * time.Second) // both keys held past SlowKey
		synctest.Wait()
		mu.Lock()
		lines := strings.Count(logs.String(), "a key holds up its values")
		first := strings.Contains(logs.String(), "holds up its values\" key=2 ")
		mu.Unlock()
		if lines != 1 || !first {
			t.Errorf("slow-key log %q: want one line (the next is counted into a later one), naming the oldest, key 2", logs.String())
		}
		failing.Store(false)
		time.Sleep(20 * time.Second) // key 2's retry is due, and succeeds
		synctest.Wait()
		if s := p.Stats().Blocked; s == nil || s.Key != 1 || s.Attempts != 1 || s.For != 26*time.Second || s.Behind != 1 {
			t.Errorf("Blocked %+v, want key 1 (in its handler) for 26s, 1 attempt, 1 behind", s)
		}
		close(release)
		if err := p.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if s := p.Stats(); s.Blocked != nil || s.Handled != 3 {
			t.Errorf("after the release: Blocked %+v, Handled %d; want none, 3", s.Blocked, s.Handled)
		}
	})
}

// TestBlockedForgetsWhatHasItsFate: a key retried and then handled, and a
// worker's last key once handled, are not named Blocked nor logged as
// slow afterwards, however long the Pool then waits.
func TestBlockedForgetsWhatHasItsFate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var logs bytes.Buffer
		var failed atomic.Bool
		b, w := source(t)
		release := make(chan struct{})
		p := handle.New(w, byKey, func(_ context.Context, j job) error {
			switch {
			case j.Key == 1 && !failed.Swap(true):
				return errors.New("once")
			case j.Key == 2:
				<-release
			}
			return nil
		}, handle.Options{Workers: 1, RetryMin: time.Second, RetryMax: time.Second, SlowKey: time.Second,
			Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
		defer p.Shutdown(context.Background())
		publish(t, b, []job{{Key: 1}})
		time.Sleep(2 * time.Second) // key 1 failed, was retried and handled
		synctest.Wait()
		publish(t, b, []job{{Key: 2, ID: 1}, {Key: 1, N: 1, ID: 2}}) // key 2 held; key 1 waits for the worker
		synctest.Wait()
		if s := p.Stats().Blocked; s == nil || s.Key != 2 {
			t.Errorf("Blocked %+v, want key 2, in its handler (key 1's retried value has its fate)", s)
		}
		close(release)
		if err := p.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		logs.Reset()
		mu.Unlock()
		time.Sleep(15 * time.Second) // past SlowKey and the log's burst interval, with nothing held
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if s := p.Stats(); s.Blocked != nil || strings.Contains(logs.String(), "holds up") {
			t.Errorf("with every value handled: Blocked %+v, log %q; want none", s.Blocked, logs.String())
		}
	})
}

// slowHandler is a slog.Handler that takes its time over each record.
type slowHandler struct{ d time.Duration }

func (h slowHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h slowHandler) Handle(context.Context, slog.Record) error {
	time.Sleep(h.d)
	return nil
}
func (h slowHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h slowHandler) WithGroup(string) slog.Handler      { return h }

// TestSlowKeysAreReadUnderTheirLock: the supervisor orders the slow
// keys it logs by when their value began, read under their shard's lock
// (a worker that begins a key's next value writes it under that lock:
// the race detector fails this test if the order is read after). Two
// keys are held past SlowKey and logged (the logger takes 300ms over
// each line), and released meanwhile: their next values begin.
func TestSlowKeysAreReadUnderTheirLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, w := source(t)
		release := make(chan struct{})
		p := handle.New(w, byKey, func(ctx context.Context, j job) error {
			if j.N == 0 {
				<-release
			}
			return nil
		}, handle.Options{Workers: 4, SlowKey: 50 * time.Millisecond, Logger: slog.New(slowHandler{300 * time.Millisecond})})
		defer p.Shutdown(context.Background())
		publish(t, b, jobs(4, 2))          // keys 0 and 1, two values each
		time.Sleep(250 * time.Millisecond) // past the tick that logs both keys, while its logger runs
		close(release)                     // each key's next value begins: its lane's first and begun are written
		synctest.Wait()
		if s := p.Stats(); s.Handled != 4 {
			t.Errorf("handled %d of 4 (%+v)", s.Handled, s)
		}
	})
}
