package natsbridge_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/handle"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// A consumer group on a partitioned topic: the replicas of a packing
// service join the group "packing" (here two members in one process, as
// two pods would), share the topic's partitions, and each runs its
// handlers on a handle.Pool keyed by the partition key, so that each
// customer's orders are packed in order, by one member, while many
// customers are packed at once.
func Example_group() {
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
	customer := func(o Order) string { return o.Customer }
	orders, err := natsbridge.NewPartitioned(ctx, js, "shop.packing", natsbridge.JSON[Order](), customer,
		natsbridge.PartitionOptions{Partitions: 4})
	if err != nil {
		panic(err)
	}
	defer orders.Shutdown(ctx)

	const n = 20
	var mu sync.Mutex
	packed := map[string][]int{} // each customer's orders, as packed
	total := 0
	all := make(chan struct{}) // closed once n orders are packed
	pack := func(ctx context.Context, o Order) error {
		mu.Lock()
		defer mu.Unlock()
		packed[o.Customer] = append(packed[o.Customer], o.ID)
		if total++; total == n {
			close(all)
		}
		return nil
	}
	var pools []*handle.Pool[Order, string]
	for _, pod := range []string{"packing-0", "packing-1"} {
		m, err := orders.Join(ctx, "packing", natsbridge.GroupOptions{Member: pod})
		if err != nil {
			panic(err)
		}
		defer m.Shutdown(ctx) // its partitions go to the members left
		pools = append(pools, handle.New(m, m.Key, pack, handle.Options{Workers: 8}))
	}

	pub, err := orders.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		panic(err)
	}
	customers := []string{"ann", "bob", "cyd", "dee", "eve"}
	for i := range n {
		_ = pub.Publish(ctx, Order{ID: i + 1, Customer: customers[i%len(customers)]})
	}
	_ = pub.Shutdown(ctx) // every order stored
	<-all
	for _, p := range pools {
		_ = p.Shutdown(ctx)
	}
	for _, c := range customers {
		fmt.Println(c, packed[c], slices.IsSorted(packed[c]))
	}
	// Output:
	// ann [1 6 11 16] true
	// bob [2 7 12 17] true
	// cyd [3 8 13 18] true
	// dee [4 9 14 19] true
	// eve [5 10 15 20] true
}
