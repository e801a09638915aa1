package ratelimit_test

import (
	"fmt"
	"time"

	"github.com/heraldgo/herald/ratelimit"
)

// One bucket per source: a noisy source is limited, a quiet one is not.
func Example() {
	l := ratelimit.New[string](ratelimit.Options{Limit: 1.0 / 60, Burst: 2}) // 2 at once, then 1 a minute
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, source := range []string{"noisy", "noisy", "noisy", "quiet"} {
		fmt.Println(source, l.AllowAt(source, now))
	}
	// Output:
	// noisy true
	// noisy true
	// noisy false
	// quiet true
}

// Each source may send 3 at once, then one every 10 seconds.
func ExampleLimiter_AllowAt() {
	l := ratelimit.New[string](ratelimit.Options{Limit: 0.1, Burst: 3})
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		fmt.Println(i, l.AllowAt("node-1", now))
	}
	fmt.Println("10 s later:", l.AllowAt("node-1", now.Add(10*time.Second)))
	// Output:
	// 0 true
	// 1 true
	// 2 true
	// 3 false
	// 4 false
	// 10 s later: true
}

// A sink takes 2 writes at once, then one every half second.
func ExampleThrottle_AllowAt() {
	t := ratelimit.NewThrottle(2, 2)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, at := range []time.Duration{0, 0, 0, 250 * time.Millisecond, 500 * time.Millisecond} {
		fmt.Println(at, t.AllowAt(now.Add(at)))
	}
	// Output:
	// 0s true
	// 0s true
	// 0s false
	// 250ms false
	// 500ms true
}
