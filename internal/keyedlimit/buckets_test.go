package keyedlimit_test

import (
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/heraldgo/herald/internal/keyedlimit"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// is returns the match function of key k.
func is[K comparable](k K) func(*K) bool { return func(s *K) bool { return *s == k } }

// TestAllowSharedHash gives every key the same hash: each key still
// has its own bucket, and a key forgotten to make room comes back full.
func TestAllowSharedHash(t *testing.T) {
	l := keyedlimit.New[string](rate.Limit(1.0/60), 1, 2)
	for i, c := range []struct {
		key  string
		want bool
	}{
		{"a", true},
		{"b", true},
		{"a", false},
		{"b", false},
		{"c", true}, // full: the one entry, a and b, is forgotten
		{"c", false},
		{"a", true}, // a full bucket again
		{"a", false},
	} {
		if got := l.Allow(0, is(c.key), func() string { return c.key }, t0); got != c.want {
			t.Errorf("call %d: Allow(0, %q, t0) = %v, want %v", i, c.key, got, c.want)
		}
	}
	if got, want := l.Evicted(), uint64(2); got != want {
		t.Errorf("Evicted() = %d, want %d", got, want)
	}
	if got, want := l.Len(), 2; got != want {
		t.Errorf("Len() = %d, want %d", got, want)
	}
}

// FuzzBucketsMatchRate runs a script of calls on keys and times, going
// back as well as forth, against one eager rate.Limiter per key: Buckets
// that build their rate.Limiter on a key's second call answer
// every call the same, whatever the limit (zero and negative ones
// included, which only ratelimit.New refuses).
func FuzzBucketsMatchRate(f *testing.F) {
	f.Add(uint8(1), uint8(1), []byte{0, 0, 0, 1, 1, 0x40, 0, 0x80, 1})
	f.Add(uint8(0), uint8(2), []byte{0, 0, 0, 0xc0, 0, 0})
	f.Add(uint8(3), uint8(3), []byte{0, 1, 2, 3, 0x41, 0x42})
	f.Add(uint8(4), uint8(2), []byte{0, 0, 0xc0, 0, 0xc0, 0})
	f.Fuzz(func(t *testing.T, limitSel, burst uint8, script []byte) {
		limit := []rate.Limit{0, 1.0 / 60, 1, rate.Inf, -1}[limitSel%5]
		b := int(burst%4) + 1
		l := keyedlimit.New[int](limit, b, 64)
		eager := map[int]*rate.Limiter{}
		now := t0
		for i, op := range script {
			k := int(op & 7)
			now = now.Add([]time.Duration{0, 30 * time.Second, -time.Minute, 2 * time.Minute}[op>>6])
			lim := eager[k]
			if lim == nil {
				lim = rate.NewLimiter(limit, b)
				eager[k] = lim
			}
			if got, want := l.Allow(uint64(k), is(k), func() int { return k }, now), lim.AllowN(now, 1); got != want {
				t.Fatalf("op %d: Allow(%d, t0%+v) = %v, rate.Limiter says %v", i, k, now.Sub(t0), got, want)
			}
		}
	})
}
