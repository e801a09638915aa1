package handle_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/heraldgo/herald/handle"
)

// partSource is an ackSource whose values come from partitions: a
// value's partition is its seq's high byte.
type partSource struct{ *ackSource }

func (partSource) PartitionOf(seq uint64) int { return int(seq >> 56) }

// TestMixedPartitionsCounted: a key function that does not refine the
// source's partition key (it puts values of two partitions under one
// key) is counted in Stats.Mixed and logged, and the values are still
// handled; a key that refines it counts nothing.
func TestMixedPartitionsCounted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		key   func(job) int
		mixed uint64
	}{
		{"refines", func(j job) int { return j.Key*10 + j.N%2 }, 0}, // the partition is Key
		{"coarser", func(j job) int { return 0 }, 3},                // every value one key
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var logs bytes.Buffer
				var mu sync.Mutex
				release := make(chan struct{})
				src := partSource{newAckSource(false)}
				p := handle.New[job, int](src, tc.key, func(ctx context.Context, j job) error {
					<-release // every value stays in the Pool until all arrived
					return nil
				}, handle.Options{Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
				for i, part := range []uint64{0, 1, 0, 1} { // Key is the partition
					src.in <- handle.Delivery[job]{Value: job{Key: int(part), N: i / 2, ID: i}, Seq: part<<56 | uint64(i+1), Attempt: 1}
				}
				synctest.Wait()
				close(release)
				if err := p.Flush(context.Background()); err != nil {
					t.Fatal(err)
				}
				s := p.Stats()
				if s.Mixed != tc.mixed || s.Handled != 4 {
					t.Errorf("Stats %+v: want Mixed %d, all 4 handled", s, tc.mixed)
				}
				mu.Lock()
				logged := strings.Contains(logs.String(), "does not refine the source's partition key")
				mu.Unlock()
				if logged != (tc.mixed > 0) {
					t.Errorf("logged %v, want %v:\n%s", logged, tc.mixed > 0, logs.String())
				}
				_ = p.Shutdown(context.Background())
			})
		})
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
