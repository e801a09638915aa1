package natsbridge_test

import (
	"context"
	"fmt"
	"os"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// Example publishes typed values to a topic and reads them with a watcher
// that later resumes where it stopped. The server runs in the process; with
// a cluster, only the connection changes.
func Example() {
	dir, _ := os.MkdirTemp("", "natsbridge-example")
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
	type Order struct{ ID int }
	orders, err := natsbridge.NewTopic(ctx, js, "shop.orders", natsbridge.JSON[Order](), natsbridge.TopicOptions{})
	if err != nil {
		panic(err)
	}
	defer orders.Shutdown(ctx)

	w, _ := orders.Watch(ctx, natsbridge.WatchOptions{Full: broadcast.Block})
	p, err := orders.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		panic(err)
	}
	for id := 1; id <= 5; id++ {
		_ = p.Publish(ctx, Order{ID: id})
	}
	_ = p.Shutdown(ctx) // every ack awaited
	fmt.Printf("publisher: %d confirmed\n", p.Stats().Confirmed)

	for range 2 {
		o, _ := w.Next(ctx)
		fmt.Println("read order", o.ID, "at sequence", w.Seq())
	}
	w.Stop()

	// Later, maybe in another process: resume after the last value read.
	again, _ := orders.Watch(ctx, natsbridge.WatchOptions{From: w.Seq() + 1})
	defer again.Stop()
	for range 3 {
		o, _ := again.Next(ctx)
		fmt.Println("resumed: order", o.ID)
	}
	// Output:
	// publisher: 5 confirmed
	// read order 1 at sequence 1
	// read order 2 at sequence 2
	// resumed: order 3
	// resumed: order 4
	// resumed: order 5
}

// ExampleTopic_Mirror feeds local watchers, each with its own policy, from
// one read of the stream.
func ExampleTopic_Mirror() {
	dir, _ := os.MkdirTemp("", "natsbridge-example")
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
	alerts, err := natsbridge.NewTopic(ctx, js, "alerts", natsbridge.JSON[string](), natsbridge.TopicOptions{})
	if err != nil {
		panic(err)
	}
	defer alerts.Shutdown(ctx)

	local, _ := alerts.Mirror(ctx, broadcast.Options{})
	audit, _ := local.WatchWith(broadcast.WatchOptions{Full: broadcast.Block})
	pager, _ := local.WatchWith(broadcast.WatchOptions{QueueLength: 1, Full: broadcast.DropOldest})

	p, err := alerts.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		panic(err)
	}
	for _, a := range []string{"disk 80%", "disk 90%", "disk full"} {
		_ = p.Publish(ctx, a)
	}
	_ = p.Shutdown(ctx)

	for range 3 {
		a, _ := audit.Next(ctx)
		fmt.Println("audit:", a)
	}
	_ = local.Flush(ctx) // every value fed so far is queued or dropped
	a, _ := pager.Next(ctx)
	fmt.Println("pager:", a, "- dropped", pager.Dropped())
	// Output:
	// audit: disk 80%
	// audit: disk 90%
	// audit: disk full
	// pager: disk full - dropped 2
}
