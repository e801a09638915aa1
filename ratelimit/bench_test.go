package ratelimit_test

import (
	"testing"
	"time"

	"github.com/heraldgo/herald/ratelimit"
)

// BenchmarkAllowAt measures a hit on one of 100 keys: no allocation.
func BenchmarkAllowAt(b *testing.B) {
	b.ReportAllocs()
	type key struct{ source, object string }
	l := ratelimit.New[key](ratelimit.Options{Burst: 1 << 30})
	keys := make([]key, 100)
	for i := range keys {
		keys[i] = key{"kubelet", string(rune('a' + i))}
	}
	now := time.Now()
	i := 0
	for b.Loop() {
		l.AllowAt(keys[i%len(keys)], now)
		i++
	}
}
