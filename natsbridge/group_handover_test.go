package natsbridge_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestGroupSlowHandlerKeepsItsPartition: a partition that moves to a new
// member while the old one's handler still holds a value of it is handed
// over only once that handler is done, however long past the takeover
// time: the new member gets none of the partition's values meanwhile, and
// none of those the old member handled, so that no key is handled by two
// members at once.
func TestGroupSlowHandlerKeepsItsPartition(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := testCtx(t)
	pt := newPartitioned(t, js, "part.slow", 2)
	keyOf := func(part int) string {
		for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
			if pt.Partition(k) == part {
				return k
			}
		}
		t.Fatalf("no key of partition %d", part)
		return ""
	}
	opts := natsbridge.GroupOptions{Member: "old", Takeover: 2 * time.Second}
	old, err := pt.Join(ctx, "slow", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(old.Stop)
	eventually(t, "the old member owns both partitions", func() bool { return len(old.Stats().Partitions) == 2 })
	pub, err := pt.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for part := range 2 {
		if err := pub.Publish(ctx, Order{ID: part + 1, Item: keyOf(part)}); err != nil {
			t.Fatal(err)
		}
	}
	var held []uint64 // both values, in their handlers
	for range 2 {
		d, err := old.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, d.Seq)
	}
	_, njs := connect(t, s)
	opts.Member = "new"
	nm, err := newPartitioned(t, njs, "part.slow", 0).Join(ctx, "slow", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nm.Stop)
	// Three takeover times: the handlers still hold both values, and the
	// new member gets nothing.
	short, cancel := context.WithTimeout(ctx, 3*opts.Takeover)
	d, err := nm.Receive(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the new member received %+v (%v) while the old one's handler held its partition's value", d, err)
	}
	for _, seq := range held {
		old.Done(seq)
	}
	eventually(t, "the partition handed over", func() bool { return len(nm.Stats().Partitions) == 1 })
	for part := range 2 {
		if err := pub.Publish(ctx, Order{ID: part + 3, Item: keyOf(part)}); err != nil {
			t.Fatal(err)
		}
	}
	d, err = nm.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Value.ID < 3 {
		t.Errorf("the new member received value %d, which the old member had handled", d.Value.ID)
	}
	nm.Done(d.Seq)
	if st := nm.Stats(); st.Redelivered != 0 {
		t.Errorf("new member's Stats %+v: want nothing redelivered after a hand-over that waited for the handlers", st)
	}
	_ = pub.Shutdown(ctx)
}
