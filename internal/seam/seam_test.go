package seam_test

import (
	"testing"
	"time"

	"github.com/heraldgo/herald/internal/seam"
	"github.com/heraldgo/herald/ratelimit"
)

// TestAllowHashedOf: the hook ratelimit sets hands out a Limiter's
// buckets by the caller's hash, one bucket per key, as AllowAt would.
func TestAllowHashedOf(t *testing.T) {
	l := ratelimit.New[string](ratelimit.Options{Limit: 1, Burst: 1})
	allow := seam.AllowHashedOf[string](l)
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	call := func(k string, at time.Duration) bool {
		// One hash for every key: the Limiter tells them apart by match.
		return allow(7, func(s *string) bool { return *s == k }, func() string { return k }, now.Add(at))
	}
	tests := []struct {
		key  string
		at   time.Duration
		want bool
	}{
		{"a", 0, true},
		{"a", 0, false},
		{"b", 0, true},
		{"a", time.Second, true},
	}
	for i, tc := range tests {
		if got := call(tc.key, tc.at); got != tc.want {
			t.Errorf("call %d: allow(%q, t0+%v) = %v, want %v", i, tc.key, tc.at, got, tc.want)
		}
	}
	if l.Len() != 2 {
		t.Errorf("Len() = %d, want the 2 keys", l.Len())
	}
}

func TestAllowHashedOfPanicsOnOtherValues(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("AllowHashedOf of a Limiter of another key type did not panic")
		}
	}()
	seam.AllowHashedOf[int](ratelimit.New[string](ratelimit.Options{}))
}
