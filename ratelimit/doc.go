// Package ratelimit holds token buckets: one per key, bounded in number, for
// filtering floods per source; and one alone, for pacing writes to a sink.
//
// # Usage
//
//	l := ratelimit.New[string](ratelimit.Options{Limit: 1.0 / 300, Burst: 25})
//	if !l.AllowAt(source, time.Now()) {
//		// over its rate: skip
//	}
//
// # Time
//
// Limiter takes the current time as an argument, so that a fake clock, or
// testing/synctest, decides what time it is. A bucket refills continuously
// at Limit tokens per second up to Burst (golang.org/x/time/rate).
//
// # Memory
//
// A Limiter keeps at most Size keys. Adding one more forgets the least
// recently used; a forgotten key comes back with a full bucket, as in
// client-go's spam filter.
//
// # Concurrency
//
// Limiter and Throttle are safe for concurrent use and start no goroutines.
package ratelimit
