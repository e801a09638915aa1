package natsbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestMemberReceiveSkipsAWaitingPartition: a member that took a partition
// over from a member that died waits out the dead one's lease before it
// hands out that partition's values; meanwhile its other partitions' values
// are handed out: one partition's wait holds up no other.
func TestMemberReceiveSkipsAWaitingPartition(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := testCtx(t)
	pt := newPartitioned(t, js, "part.gate", 2)
	// Partition 0's record: a member that died with its lease running
	// for 4s more.
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "herald_part_gate", History: 1, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(struct {
		Owner  string `json:"owner"`
		Handed uint64 `json:"handed"`
		Until  int64  `json:"until"`
	}{"dead", 1, time.Now().Add(4 * time.Second).UnixNano()})
	if _, err := kv.Put(ctx, "p0.ship", rec); err != nil {
		t.Fatal(err)
	}
	keyOf := func(part int) string {
		for i := 0; ; i++ {
			if k := "k" + strconv.Itoa(i); pt.Partition(k) == part {
				return k
			}
		}
	}
	m, err := pt.Join(ctx, "ship", natsbridge.GroupOptions{Member: "a", Takeover: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	pub, err := pt.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish(ctx, Order{ID: 0, Item: keyOf(0)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "partition 0 taken over", func() bool {
		e, err := kv.Get(ctx, "p0.ship")
		var r durableRec
		return err == nil && json.Unmarshal(e.Value(), &r) == nil && r.Owner != "dead"
	})
	for i := 1; i <= 3; i++ {
		if err := pub.Publish(ctx, Order{ID: i, Item: keyOf(1)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for got := 0; got < 3; {
		short, cancel := context.WithTimeout(ctx, time.Second)
		d, err := m.Receive(short)
		cancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			t.Fatalf("Receive waited out its ctx with %d of partition 1's 3 values handed out: partition 0's wait for the dead member's lease held them up", got)
		case err != nil:
			t.Fatal(err)
		case m.PartitionOf(d.Seq) == 1:
			got++
		}
		m.Done(d.Seq)
	}
}

// TestMemberStatsNeverGoBack: a member's counters sum its partitions'
// watchers; they are cumulative (telemetry exports them as counters), so a
// partition the member loses and takes back later keeps what its first
// watcher counted.
func TestMemberStatsNeverGoBack(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := testCtx(t)
	pt := newPartitioned(t, js, "part.mono", 2)
	join := func(name string) *natsbridge.Member[Order] {
		m, err := pt.Join(ctx, "ship", natsbridge.GroupOptions{Member: name, Takeover: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
		return m
	}
	a := join("a")
	eventually(t, "a reads both partitions", func() bool { return len(a.Stats().Partitions) == 2 })
	for i := range 2 {
		if _, err := js.Publish(ctx, pt.Topic(i).Name(), []byte("not json")); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "a counts both poison messages", func() bool { return a.Stats().Poisoned == 2 })
	b := join("b")
	eventually(t, "b takes a partition", func() bool { return len(b.Stats().Partitions) == 1 })
	d, err := b.Receive(ctx) // the poison message of b's partition: done, so a will not read it again
	if err != nil || d.Err == nil {
		t.Fatalf("b.Receive = %+v, %v; want the poison message", d, err)
	}
	b.Done(d.Seq)
	if err := b.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a reads both partitions again", func() bool { return len(a.Stats().Partitions) == 2 })
	if got := a.Stats().Poisoned; got < 2 {
		t.Errorf("a.Stats().Poisoned = %d after it took a partition back, was 2: a cumulative count went back", got)
	}
}
