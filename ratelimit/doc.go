// Package ratelimit holds token buckets: a Limiter keeps one per key,
// bounded in number, to hold back a source that floods; a Throttle is one
// bucket alone, to pace writes to a sink.
//
// # Usage
//
//	l := ratelimit.New[string](ratelimit.Options{Limit: 1.0 / 300, Burst: 25})
//	if !l.AllowAt(source, time.Now()) {
//		// source is over its rate: skip this one
//	}
//
//	t := ratelimit.NewThrottle(100, 10) // 100 writes a second, 10 at once
//	if err := t.Wait(ctx); err != nil {
//		return err // ctx ended first
//	}
//
// # Time
//
// Limiter.AllowAt and Throttle.AllowAt take the current time as an
// argument, so that a fake clock decides what time it is. Throttle.Wait
// reads the time package's clock, so testing/synctest controls it. A bucket
// refills continuously at its limit, in tokens per second, up to its burst
// (golang.org/x/time/rate).
//
// # Memory
//
// A Limiter keeps at most Options.Size keys, in a least-recently-used cache
// (github.com/hashicorp/golang-lru/v2) that finds each key by a hash
// computed once per call. Adding a key beyond Size forgets the least
// recently used; a forgotten key comes back with a full bucket.
//
// # Concurrency
//
// Limiter and Throttle are safe for concurrent use and start no goroutines.
package ratelimit
