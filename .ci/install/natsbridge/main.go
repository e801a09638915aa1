// Command natsbridge publishes one value through natsbridge to a NATS
// server embedded in the process and reads it back, as a module outside
// the repository does, with herald got by version from a module proxy:
// .ci/install-check builds and runs it.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "natsbridge:", err)
		os.Exit(1)
	}
}

// Order is the value the topic carries.
type Order struct {
	ID int
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a failsafe
	defer cancel()
	dir, err := os.MkdirTemp("", "natsbridge-install-check")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	srv, err := embedded.Start(embedded.Options{Dir: dir}) // listens on nothing
	if err != nil {
		return err
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}

	orders, err := natsbridge.NewTopic(ctx, js, "shop.orders", natsbridge.JSON[Order](), natsbridge.TopicOptions{})
	if err != nil {
		return err
	}
	defer orders.Shutdown(ctx)
	w, err := orders.Watch(ctx, natsbridge.WatchOptions{})
	if err != nil {
		return err
	}
	defer w.Stop()

	p, err := orders.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		return err
	}
	if err := p.Publish(ctx, Order{ID: 1}); err != nil {
		return err
	}
	if err := p.Shutdown(ctx); err != nil { // returns once the server has acknowledged it
		return err
	}
	got, err := w.Next(ctx)
	if err != nil {
		return err
	}
	if got.ID != 1 {
		return fmt.Errorf("watcher got order %d, want 1", got.ID)
	}
	fmt.Printf("published and read back order %d at stream sequence %d\n", got.ID, w.Seq())
	return nil
}
