package natsbridge_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/handle"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// A durable watcher read by a handle.Pool: each customer's orders shipped
// in order, several customers at once, each order acknowledged once its
// handler returned, and the order that cannot be shipped kept in a
// dead-letter topic, from which Redrive can publish it back.
func Example_handle() {
	dir, _ := os.MkdirTemp("", "herald-example-*")
	defer os.RemoveAll(dir)
	srv, err := embedded.Start(embedded.Options{Dir: dir})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown()
	nc, _ := srv.Connect()
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()

	type Order struct {
		ID       int
		Customer string
	}
	orders, err := natsbridge.NewTopic(ctx, js, "shop.orders", natsbridge.JSON[Order](), natsbridge.TopicOptions{Schema: "shop.Order/v1"})
	if err != nil {
		panic(err)
	}
	defer orders.Shutdown(ctx)
	dead, err := natsbridge.NewTopic(ctx, js, "shop.orders.dead", natsbridge.JSON[natsbridge.DeadLetter](), natsbridge.TopicOptions{})
	if err != nil {
		panic(err)
	}
	defer dead.Shutdown(ctx)

	w, err := orders.Watch(ctx, natsbridge.WatchOptions{Durable: "shipping", DeadLetters: dead})
	if err != nil {
		panic(err)
	}
	ship := func(ctx context.Context, o Order) error {
		if o.ID == 3 {
			return handle.Permanent(errors.New("no such address"))
		}
		return nil // shipped: the order is acknowledged
	}
	p := handle.New(w, func(o Order) string { return o.Customer }, ship, handle.Options{Workers: 8})

	pub, err := orders.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		panic(err)
	}
	for i, c := range []string{"ann", "bob", "ann", "cyd"} {
		_ = pub.Publish(ctx, Order{ID: i + 1, Customer: c})
	}
	_ = pub.Shutdown(ctx) // every order stored
	_ = w.Flush(ctx)      // every order in the watcher's queue
	_ = p.Flush(ctx)      // every order has its fate
	_ = p.Shutdown(ctx)   // and the position is handed over

	s := p.Stats()
	fmt.Println("handled", s.Handled, "dead-lettered", s.DeadLettered, "acknowledged up to", w.Stats().Acked)
	st, _ := natsbridge.Redrive(ctx, dead, func(d natsbridge.DeadLetter) bool {
		fmt.Printf("dead letter: %s #%d after %d attempt: %s\n", d.Topic, d.Seq, d.Attempts, d.Error)
		return true // kept: fix the address first
	})
	fmt.Println("kept", st.Kept)
	// Output:
	// handled 3 dead-lettered 1 acknowledged up to 4
	// dead letter: shop.orders #3 after 1 attempt: no such address
	// kept 1
}
