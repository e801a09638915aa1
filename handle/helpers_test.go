package handle_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/handle"
)

// quiet is a logger for tests that make the Pool warn on purpose.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// job is a test value: its key, and its place among its key's values.
type job struct {
	Key int
	N   int // 0, 1, 2… within its key
	ID  int // 0, 1, 2… overall
}

// source returns a broadcaster and a watcher of it, shut down with the
// test.
func source(t testing.TB) (*broadcast.Broadcaster[job], *broadcast.Watcher[job]) {
	t.Helper()
	b := broadcast.New[job](broadcast.Options{QueueLength: 1 << 16})
	w, err := b.Watch()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Shutdown(context.Background()) })
	return b, w
}

// jobs returns n jobs spread over keys keys, round robin.
func jobs(n, keys int) []job {
	out := make([]job, n)
	next := make([]int, keys)
	for i := range out {
		k := i % keys
		out[i] = job{Key: k, N: next[k], ID: i}
		next[k]++
	}
	return out
}

func publish(t testing.TB, b *broadcast.Broadcaster[job], js []job) {
	t.Helper()
	for _, j := range js {
		if err := b.Publish(context.Background(), j); err != nil {
			t.Fatal(err)
		}
	}
}

func byKey(j job) int { return j.Key }

// checkConserved fails unless s's fates add up to what it received.
func checkConserved[K comparable](t testing.TB, s handle.Stats[K]) {
	t.Helper()
	fated := s.Handled + s.DeadLettered + uint64(s.InFlight) + uint64(s.Waiting) + uint64(s.Backoff) + s.Abandoned
	if fated != s.Received {
		t.Errorf("Received %d, but Handled %d + DeadLettered %d + InFlight %d + Waiting %d + Backoff %d + Abandoned %d = %d",
			s.Received, s.Handled, s.DeadLettered, s.InFlight, s.Waiting, s.Backoff, s.Abandoned, fated)
	}
}

// heldPool returns a Pool over a test source (see source) whose handler
// holds each value held reports, until release is closed.
func heldPool(t testing.TB, held func(job) bool, o handle.Options) (*broadcast.Broadcaster[job], *broadcast.Watcher[job], *handle.Pool[job, int], chan struct{}) {
	t.Helper()
	b, w := source(t)
	release := make(chan struct{})
	o.Logger = quiet
	p := handle.New(w, byKey, func(ctx context.Context, j job) error {
		if held(j) {
			<-release
		}
		return nil
	}, o)
	return b, w, p, release
}

// snapshots takes p's Stats over and over on a goroutine, checking that
// each adds up and that check (if not nil) passes, until the stop it
// returns is called; stop returns how many it took.
func snapshots(t testing.TB, p *handle.Pool[job, int], check func(handle.Stats[int]) error) (stop func() int) {
	halt, taken := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		defer func() { taken <- n }()
		for {
			select {
			case <-halt:
				return
			default:
			}
			s := p.Stats()
			checkConserved(t, s)
			if check != nil {
				if err := check(s); err != nil {
					t.Errorf("snapshot %+v: %v", s, err)
					<-halt
					return
				}
			}
			n++
		}
	}()
	return func() int {
		close(halt)
		return <-taken
	}
}
