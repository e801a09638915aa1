package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"

	"github.com/heraldgo/herald/ratelimit"
)

// Wait paces writes to a sink: it blocks until a token is free, or refuses
// at once when ctx's deadline comes before the next token.
func ExampleThrottle_Wait() {
	ctx := context.Background()
	fast := ratelimit.NewThrottle(1000, 10) // 10 at once, then one a millisecond
	wrote := 0
	for range 20 {
		if err := fast.Wait(ctx); err != nil {
			panic(err)
		}
		wrote++ // the write to the sink goes here
	}
	fmt.Println("wrote:", wrote)

	slow := ratelimit.NewThrottle(rate.Every(time.Minute), 1)
	fmt.Println("first:", slow.Wait(ctx))
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	// The next token is a minute away: Wait returns without waiting the second.
	fmt.Println("second:", slow.Wait(short))
	// Output:
	// wrote: 20
	// first: <nil>
	// second: context deadline exceeded
}
