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

// Forward sends what a local Broadcaster publishes on to a topic, so other
// processes watching the topic see it too.
func ExampleForward() {
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
	jobs, err := natsbridge.NewTopic(ctx, js, "jobs", natsbridge.JSON[string](), natsbridge.TopicOptions{})
	if err != nil {
		panic(err)
	}
	defer jobs.Shutdown(ctx)
	remote, _ := jobs.Watch(ctx, natsbridge.WatchOptions{}) // stands in for another process
	defer remote.Stop()

	local := broadcast.New[string](broadcast.Options{})
	defer local.Shutdown(ctx)
	p, err := jobs.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		panic(err)
	}
	defer p.Shutdown(ctx)
	stop := natsbridge.Forward(local, p)

	for _, j := range []string{"resize", "thumbnail", "upload"} {
		_ = local.Publish(ctx, j)
	}
	for range 3 {
		j, _ := remote.Next(ctx)
		fmt.Println("arrived:", j)
	}
	fmt.Println("stop:", stop(ctx)) // nil: the forwarding goroutine has exited
	// Output:
	// arrived: resize
	// arrived: thumbnail
	// arrived: upload
	// stop: <nil>
}
