package ratelimit_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/heraldgo/herald/ratelimit"
)

// benchKey is the shape of client-go's spam key: source and object.
type benchKey struct{ source, object string }

func benchKeys() []benchKey {
	keys := make([]benchKey, 100)
	for i := range keys {
		keys[i] = benchKey{"kubelet", fmt.Sprint("pod-", i)}
	}
	return keys
}

// BenchmarkAllowAt measures a hit on one of 100 keys seen before: no
// allocation once each key has its token bucket (from its third call).
func BenchmarkAllowAt(b *testing.B) {
	b.ReportAllocs()
	keys := benchKeys()
	l := ratelimit.New[benchKey](ratelimit.Options{Burst: 1 << 30})
	now := time.Now()
	i := 0
	for b.Loop() {
		l.AllowAt(keys[i%len(keys)], now)
		i++
	}
}

// BenchmarkAllowAtParallel is BenchmarkAllowAt from every P at once: the
// cost of the Limiter's one lock under contention.
func BenchmarkAllowAtParallel(b *testing.B) {
	b.ReportAllocs()
	keys := benchKeys()
	l := ratelimit.New[benchKey](ratelimit.Options{Burst: 1 << 30})
	now := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			l.AllowAt(keys[i%len(keys)], now)
			i++
		}
	})
}
