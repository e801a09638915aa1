package handle_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/handle"
)

// Order is an order of a customer.
type Order struct {
	ID       int
	Customer string
}

// Ship orders on four workers at once, each customer's orders in the order
// they came, and collect the one that cannot be shipped as a dead letter.
func ExampleNew() {
	ctx := context.Background()
	orders := broadcast.New[Order](broadcast.Options{})
	defer orders.Shutdown(ctx)
	w, _ := orders.Watch()

	var mu sync.Mutex
	shipped := map[string][]int{}
	ship := func(ctx context.Context, o Order) error {
		if o.ID == 4 {
			return handle.Permanent(errors.New("no such address"))
		}
		mu.Lock()
		defer mu.Unlock()
		shipped[o.Customer] = append(shipped[o.Customer], o.ID)
		return nil
	}
	p := handle.New(w, func(o Order) string { return o.Customer }, ship, handle.Options{Workers: 4})

	for i, c := range []string{"ann", "bob", "ann", "bob", "ann", "cyd"} {
		_ = orders.Publish(ctx, Order{ID: i + 1, Customer: c})
	}
	_ = orders.Flush(ctx) // every order is in the watcher's queue
	_ = p.Flush(ctx)      // every order has its fate
	d, _ := p.DeadLetters().Next(ctx)
	_ = p.Shutdown(ctx)

	for _, c := range slices.Sorted(maps.Keys(shipped)) {
		fmt.Println(c, shipped[c])
	}
	fmt.Printf("dead letter: order %d of %s after %d attempt: %v\n", d.Value.ID, d.Key, d.Attempts, d.Err)
	s := p.Stats()
	fmt.Println("received", s.Received, "handled", s.Handled, "dead-lettered", s.DeadLettered)
	// Output:
	// ann [1 3 5]
	// bob [2]
	// cyd [6]
	// dead letter: order 4 of bob after 1 attempt: no such address
	// received 6 handled 5 dead-lettered 1
}
