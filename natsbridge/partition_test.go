package natsbridge_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/handle"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

func orderKey(o Order) string { return o.Item }

func newPartitioned(t testing.TB, js jetstream.JetStream, name string, p int) *natsbridge.Partitioned[Order] {
	t.Helper()
	pt, err := natsbridge.NewPartitioned(testCtx(t), js, name, natsbridge.JSON[Order](), orderKey, natsbridge.PartitionOptions{Partitions: p, Topic: natsbridge.TopicOptions{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pt.Shutdown(context.Background()) })
	return pt
}

// TestPartitionedRoutesByKey: a value goes to the partition its key
// picks, by Kafka's partitioner; P is recorded with the topic: another P
// is refused naming both, zero opens it as it is.
func TestPartitionedRoutesByKey(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	pt := newPartitioned(t, js, "part.orders", 6)
	pub, err := pt.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 600
	for i := range n {
		if err := pub.Publish(testCtx(t), Order{ID: i, Item: "k" + strconv.Itoa(i%40)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if st := pub.Stats(); st.Confirmed != n {
		t.Fatalf("Stats %+v, want %d confirmed", st, n)
	}
	total := 0
	for i := range pt.Partitions() {
		w := watchTopic(t, pt.Topic(i), natsbridge.WatchOptions{From: 1, QueueLength: n})
		if err := w.Flush(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		got := drainNow(t, w)
		for _, o := range got {
			if p := pt.Partition(o.Item); p != i {
				t.Fatalf("key %q in partition %d, Partition says %d", o.Item, i, p)
			}
		}
		if !slices.IsSortedFunc(got, func(a, b Order) int { return a.ID - b.ID }) {
			t.Errorf("partition %d out of order", i)
		}
		total += len(got)
	}
	if total != n {
		t.Errorf("%d values in the partitions, want %d", total, n)
	}
	if _, err := natsbridge.NewPartitioned(testCtx(t), js, "part.orders", natsbridge.JSON[Order](), orderKey, natsbridge.PartitionOptions{Partitions: 4}); !errors.Is(err, natsbridge.ErrConfigDiffers) || !strings.Contains(err.Error(), "4 asked, 6 on the topic") {
		t.Errorf("NewPartitioned with 4 partitions = %v, want ErrConfigDiffers naming both", err)
	}
	again, err := natsbridge.NewPartitioned(testCtx(t), js, "part.orders", natsbridge.JSON[Order](), orderKey, natsbridge.PartitionOptions{})
	if err != nil || again.Partitions() != 6 {
		t.Fatalf("NewPartitioned with zero options = %v, %v; want 6 partitions", again, err)
	}
	_ = again.Shutdown(testCtx(t))
	if _, err := natsbridge.NewPartitioned(testCtx(t), js, "part.missing", natsbridge.JSON[Order](), orderKey, natsbridge.PartitionOptions{}); err == nil || !strings.Contains(err.Error(), "Partitions") {
		t.Errorf("NewPartitioned of a missing topic with zero options = %v, want an error naming Partitions", err)
	}
}

// drainNow reads what w holds now.
func drainNow[T any](t testing.TB, w *natsbridge.Watcher[T]) []T {
	t.Helper()
	var out []T
	for {
		ctx, cancel := context.WithTimeout(testCtx(t), 100*time.Millisecond)
		v, err := w.Next(ctx)
		cancel()
		if err != nil {
			return out
		}
		out = append(out, v)
	}
}

// groupMember is a member with its Pool, recording what it handles.
type groupMember struct {
	m  *natsbridge.Member[Order]
	p  *handle.Pool[Order, string]
	mu sync.Mutex
	by map[string][]int // per key: the IDs handled, in order
}

func join(t *testing.T, pt *natsbridge.Partitioned[Order], name string) *groupMember {
	t.Helper()
	m, err := pt.Join(testCtx(t), "ship", natsbridge.GroupOptions{Member: name, Takeover: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	gm := &groupMember{m: m, by: map[string][]int{}}
	gm.p = handle.New(m, m.Key, func(ctx context.Context, o Order) error {
		gm.mu.Lock()
		gm.by[o.Item] = append(gm.by[o.Item], o.ID)
		gm.mu.Unlock()
		time.Sleep(100 * time.Microsecond) // the handler's work
		return nil
	}, handle.Options{Workers: 4, Logger: quiet})
	t.Cleanup(func() { _ = gm.p.Shutdown(context.Background()) })
	return gm
}

// TestGroupSharesPartitions: three members of a group share six
// partitions two each; every value is handled once, each key's values in
// order by one member. One member stops: the others take its partitions
// over and handle what follows; a new member joins and takes its share.
func TestGroupSharesPartitions(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	pt := newPartitioned(t, js, "part.group", 6)
	var ms []*groupMember
	for _, name := range []string{"a", "b", "c"} {
		_, mjs := connect(t, s)
		ms = append(ms, join(t, newPartitioned(t, mjs, "part.group", 0), name))
	}
	eventually(t, "the partitions shared two each", func() bool {
		for _, gm := range ms {
			if len(gm.m.Stats().Partitions) != 2 {
				return false
			}
		}
		return true
	})
	pub, err := pt.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	publish := func(first, last int) {
		for i := first; i <= last; i++ {
			if err := pub.Publish(testCtx(t), Order{ID: i, Item: "k" + strconv.Itoa(i%50)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	handled := func() map[int]int {
		seen := map[int]int{}
		for _, gm := range ms {
			gm.mu.Lock()
			for _, ids := range gm.by {
				for _, id := range ids {
					seen[id]++
				}
			}
			gm.mu.Unlock()
		}
		return seen
	}
	allHandled := func(last int) func() bool {
		return func() bool {
			seen := handled()
			for i := 1; i <= last; i++ {
				if seen[i] == 0 {
					return false
				}
			}
			return true
		}
	}
	publish(1, 1000)
	eventually(t, "every value handled", allHandled(1000))
	// b stops: a and c take its partitions over.
	if err := ms[1].p.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	publish(1001, 2000)
	eventually(t, "every value handled after b stopped", allHandled(2000))
	eventually(t, "a and c share the six", func() bool {
		return len(ms[0].m.Stats().Partitions)+len(ms[2].m.Stats().Partitions) == 6
	})
	// d joins: it takes its share.
	_, djs := connect(t, s)
	ms = append(ms, join(t, newPartitioned(t, djs, "part.group", 0), "d"))
	eventually(t, "d takes its share", func() bool { return len(ms[3].m.Stats().Partitions) >= 2 })
	publish(2001, 3000)
	eventually(t, "every value handled after d joined", allHandled(3000))
	for id, n := range handled() {
		if n != 1 {
			t.Errorf("value %d handled %d times, want once: every hand-over was clean", id, n)
		}
	}
	owner := map[string]int{}
	for i, gm := range ms {
		gm.mu.Lock()
		for k, ids := range gm.by {
			if !slices.IsSorted(ids) {
				t.Errorf("member %d handled key %s out of order", i, k)
			}
			owner[k]++
		}
		gm.mu.Unlock()
	}
	var stats []string
	for _, gm := range ms {
		st := gm.m.Stats()
		stats = append(stats, fmt.Sprintf("%v (rebalances %d, handovers %d in %v)", st.Partitions, st.Rebalances, st.Handovers, st.HandoverTime))
	}
	t.Logf("members: %s", strings.Join(stats, "; "))
	_ = pub.Shutdown(testCtx(t))
}
