package natsbridge_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nuid"

	"github.com/heraldgo/herald/handle"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/natstest"
)

// cpuMeter measures the processor time the cluster's servers and this
// process (the clients) use over a benchmark: cpu-µs per value for each,
// from which natsbridge/README.md ("Partitions") models the throughput of
// machines with more cores. With no cluster (one server, in this
// process), it measures the process alone: the server and the clients.
type cpuMeter struct {
	c      *natstest.Cluster // nil: one server, in this process
	srv    []time.Duration
	client time.Duration
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startMeter(c *natstest.Cluster) *cpuMeter {
	m := &cpuMeter{c: c, client: selfCPU()}
	if c != nil {
		for _, s := range c.Servers {
			m.srv = append(m.srv, s.CPU())
		}
	}
	return m
}

// report reports, per value of n: the servers' CPU added up, the busiest
// server's, and the client's; with no cluster, the process's (cpu).
func (m *cpuMeter) report(b *testing.B, n int) {
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	if m.c == nil {
		b.ReportMetric(per(selfCPU()-m.client), "cpu-µs/value")
		return
	}
	var sum, busiest time.Duration
	for i, s := range m.c.Servers {
		d := s.CPU() - m.srv[i]
		sum += d
		busiest = max(busiest, d)
	}
	b.ReportMetric(per(sum), "srv-cpu-µs/value")
	b.ReportMetric(per(busiest), "busiest-srv-cpu-µs/value")
	b.ReportMetric(per(selfCPU()-m.client), "client-cpu-µs/value")
}

// BenchmarkPartitioned runs on a 3-node cluster of nats-server processes,
// every partition replicated on the three:
//   - publish/partitions=P: a partitioned publisher publishes b.N values
//     of random keys, waiting for every ack (Shutdown);
//   - read/partitions=P/members=3: the 3 members of a group read b.N
//     values stored while they did not read, marking each done at once;
//   - handle/partitions=6/members=M: M members of a group (each with a
//     connection of its own) handle b.N values with a handle.Pool of 16
//     workers and a handler that takes 1ms, from the first publish to the
//     last value handled.
//
// values/s is the throughput; the cpu metrics are the processor time of
// the servers and of this process per value (see cpuMeter): on this
// machine the servers and the clients share its cores.
func BenchmarkPartitioned(b *testing.B) {
	c := natstest.StartCluster(b, 3, natstest.Options{})
	for _, p := range []int{1, 3, 6} {
		b.Run(fmt.Sprintf("publish/partitions=%d", p), func(b *testing.B) { benchPartitionedPublish(b, c, p) })
	}
	for _, p := range []int{1, 3, 6} {
		b.Run(fmt.Sprintf("read/partitions=%d/members=3", p), func(b *testing.B) { benchPartitionedRead(b, c, p, 3) })
	}
	for _, m := range []int{1, 3} {
		b.Run(fmt.Sprintf("handle/partitions=6/members=%d", m), func(b *testing.B) { benchPartitionedHandle(b, c, 6, m) })
	}
}

func benchPartitioned(b *testing.B, c *natstest.Cluster, p int) *natsbridge.Partitioned[Order] {
	_, js := dial(b, c.URL())
	name := "bench.part." + nuid.Next()
	pt, err := natsbridge.NewPartitioned(context.Background(), js, name, natsbridge.JSON[Order](), func(o Order) string { return o.Item },
		natsbridge.PartitionOptions{Partitions: p, Topic: natsbridge.TopicOptions{Replicas: 3, Logger: quiet}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = pt.Shutdown(context.Background())
		_ = pt.Delete(context.Background())
	})
	return pt
}

func benchPartitionedPublish(b *testing.B, c *natstest.Cluster, p int) {
	pt := benchPartitioned(b, c, p)
	pub, err := pt.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	m := startMeter(c)
	b.ResetTimer()
	for i := range b.N {
		if err := pub.Publish(ctx, Order{ID: i, Item: strconv.Itoa(i)}); err != nil {
			b.Fatal(err)
		}
	}
	if err := pub.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	m.report(b, b.N)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "values/s")
}

// joinMembers joins n members, each with a connection of its own, to the
// group "bench" of pt, and waits until they own every partition.
func joinMembers(b *testing.B, c *natstest.Cluster, pt *natsbridge.Partitioned[Order], n int) []*natsbridge.Member[Order] {
	var ms []*natsbridge.Member[Order]
	for i := range n {
		_, js := dial(b, c.URL())
		mpt, err := natsbridge.NewPartitioned(context.Background(), js, pt.Name(), natsbridge.JSON[Order](), func(o Order) string { return o.Item }, natsbridge.PartitionOptions{})
		if err != nil {
			b.Fatal(err)
		}
		m, err := mpt.Join(context.Background(), "bench", natsbridge.GroupOptions{Member: "m" + strconv.Itoa(i), Takeover: 2 * time.Second, QueueLength: 256})
		if err != nil {
			b.Fatal(err)
		}
		ms = append(ms, m)
		b.Cleanup(func() { _ = mpt.Shutdown(context.Background()) })
	}
	eventually(b, "the group settled", func() bool {
		n := 0
		for _, m := range ms {
			n += len(m.Stats().Partitions)
		}
		return n == pt.Partitions()
	})
	return ms
}

func benchPartitionedHandle(b *testing.B, c *natstest.Cluster, p, members int) {
	pt := benchPartitioned(b, c, p)
	var handled atomic.Int64
	var pools []*handle.Pool[Order, string]
	for _, m := range joinMembers(b, c, pt, members) {
		pools = append(pools, handle.New(m, m.Key, func(ctx context.Context, o Order) error {
			time.Sleep(time.Millisecond) // the handler's work
			handled.Add(1)
			return nil
		}, handle.Options{Workers: 16, Logger: quiet}))
	}
	defer func() {
		for _, pool := range pools {
			_ = pool.Shutdown(context.Background())
		}
	}()
	pub, err := pt.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	meter := startMeter(c)
	b.ResetTimer()
	for i := range b.N {
		if err := pub.Publish(ctx, Order{ID: i, Item: strconv.Itoa(i)}); err != nil {
			b.Fatal(err)
		}
	}
	for handled.Load() < int64(b.N) {
		time.Sleep(time.Millisecond) // polling the handlers' progress
	}
	b.StopTimer()
	meter.report(b, b.N)
	_ = pub.Shutdown(ctx)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "values/s")
}

// benchPartitionedRead stores b.N values while the members of a settled
// group do not read (each watcher queues its QueueLength and its feed
// waits), then times the members reading them all, each marking every
// value done as soon as it has it.
func benchPartitionedRead(b *testing.B, c *natstest.Cluster, p, members int) {
	pt := benchPartitioned(b, c, p)
	ms := joinMembers(b, c, pt, members)
	pub, err := pt.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range b.N {
		if err := pub.Publish(ctx, Order{ID: i, Item: strconv.Itoa(i)}); err != nil {
			b.Fatal(err)
		}
	}
	if err := pub.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	var read atomic.Int64
	all := make(chan struct{})
	b.ReportAllocs()
	meter := startMeter(c)
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() {
			for {
				d, err := m.Receive(ctx)
				if err != nil {
					return
				}
				m.Done(d.Seq)
				if read.Add(1) == int64(b.N) {
					close(all)
				}
			}
		})
	}
	<-all
	b.StopTimer()
	meter.report(b, b.N)
	cancel()
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "values/s")
}
