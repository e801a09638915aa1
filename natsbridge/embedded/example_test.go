package embedded_test

import (
	"context"
	"fmt"
	"os"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// A server with JetStream in the process: connect without a socket, open a
// typed topic, publish a value and read it back, then shut everything down.
func ExampleStart() {
	dir, _ := os.MkdirTemp("", "embedded-example")
	defer os.RemoveAll(dir)
	srv, err := embedded.Start(embedded.Options{Dir: dir}) // streams are stored in dir
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown() // deferred first, so it runs last: after nc.Close
	nc, err := srv.Connect()
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)

	ctx := context.Background()
	greetings, err := natsbridge.NewTopic(ctx, js, "greetings", natsbridge.JSON[string](), natsbridge.TopicOptions{})
	if err != nil {
		panic(err)
	}
	defer greetings.Shutdown(ctx)

	w, _ := greetings.Watch(ctx, natsbridge.WatchOptions{})
	defer w.Stop()
	p, err := greetings.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		panic(err)
	}
	_ = p.Publish(ctx, "hello")
	_ = p.Shutdown(ctx) // returns once the server acknowledged the value
	got, _ := w.Next(ctx)
	fmt.Println("read:", got)
	fmt.Printf("URL %q: no listener, only this process connects\n", srv.URL())
	// Output:
	// read: hello
	// URL "": no listener, only this process connects
}
