package fanoutbench

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"tailscale.com/util/eventbus"

	"github.com/heraldgo/herald/broadcast"
)

// An Order is the value fanned out.
type Order struct {
	ID     int
	Status string
}

// BenchmarkFanout publishes b.N values to n subscribers through each
// implementation and stops the clock once every subscriber has read all
// of them. It counts with b.N, not b.Loop: the subscribers must know how
// many values to wait for.
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("subscribers=%d/impl=herald", n), func(b *testing.B) { benchHerald(b, n) })
		b.Run(fmt.Sprintf("subscribers=%d/impl=eventbus", n), func(b *testing.B) { benchEventbus(b, n) })
		b.Run(fmt.Sprintf("subscribers=%d/impl=gochannel", n), func(b *testing.B) { benchGochannel(b, n) })
	}
}

// benchHerald: a Broadcaster with n Block watchers, each read with All.
func benchHerald(b *testing.B, n int) {
	b.ReportAllocs()
	bc := broadcast.New[Order](broadcast.Options{})
	b.Cleanup(func() { _ = bc.Shutdown(context.Background()) })
	var wg sync.WaitGroup
	for range n {
		w, err := bc.Watch()
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(w.Stop)
		wg.Go(func() {
			got := 0
			for range w.All() {
				if got++; got == b.N {
					return
				}
			}
		})
	}
	ctx := context.Background()
	v := Order{ID: 1, Status: "paid"}
	b.ResetTimer()
	for range b.N {
		if err := bc.Publish(ctx, v); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	b.StopTimer()
}

// benchEventbus: a Bus with one publishing client and n subscribing
// clients, each read from its Events channel.
func benchEventbus(b *testing.B, n int) {
	b.ReportAllocs()
	bus := eventbus.New()
	b.Cleanup(bus.Close)
	pub := eventbus.Publish[Order](bus.Client("publisher"))
	var wg sync.WaitGroup
	for i := range n {
		sub := eventbus.Subscribe[Order](bus.Client(fmt.Sprintf("subscriber-%d", i)))
		wg.Go(func() {
			got := 0
			for range sub.Events() {
				if got++; got == b.N {
					return
				}
			}
		})
	}
	v := Order{ID: 1, Status: "paid"}
	b.ResetTimer()
	for range b.N {
		pub.Publish(v)
	}
	wg.Wait()
	b.StopTimer()
}

// benchGochannel: a GoChannel with n subscriptions to one topic, each
// message acknowledged as it is read.
func benchGochannel(b *testing.B, n int) {
	b.ReportAllocs()
	pubsub := gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 100}, watermill.NopLogger{})
	b.Cleanup(func() { _ = pubsub.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	var wg sync.WaitGroup
	for range n {
		msgs, err := pubsub.Subscribe(ctx, "orders")
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			got := 0
			for m := range msgs {
				m.Ack()
				if got++; got == b.N {
					return
				}
			}
		})
	}
	payload := []byte(`{"ID":1,"Status":"paid"}`)
	b.ResetTimer()
	for range b.N {
		if err := pubsub.Publish("orders", message.NewMessage("", payload)); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	b.StopTimer()
}
