package natsbridge

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// notFoundKV is a bucket without the record asked for.
type notFoundKV struct{ jetstream.KeyValue }

func (notFoundKV) Get(context.Context, string) (jetstream.KeyValueEntry, error) {
	return nil, jetstream.ErrKeyNotFound
}

// TestDurableRecordNotFoundIsLostOrNewOrAnError: a record not found is
// lost if the bucket says so (a deletion or purge its last entry, or the
// mark of a bucket made again), new if it says it was never written, and
// an error if the bucket cannot say: taken for new, a record deleted by
// hand would count nothing as redelivered and wait for no lease.
func TestDurableRecordNotFoundIsLostOrNewOrAnError(t *testing.T) {
	k := newKeeper(notFoundKV{}, "d", nil, "", 2*time.Second, newAcks(nil), newLimitedLog(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer k.g.Stop()
	for _, c := range []struct {
		lost bool
		err  error
		want string
	}{{true, nil, lostOwner}, {false, nil, ""}, {false, context.DeadlineExceeded, "error"}} {
		k.lost = func(context.Context, string) (bool, error) { return c.lost, c.err }
		rec, _, err := k.read(context.Background())
		got := rec.Owner
		if err != nil {
			got = "error"
		}
		if got != c.want {
			t.Errorf("the bucket saying lost %v (%v): read %+v, %v; want %q", c.lost, c.err, rec, err, c.want)
		}
	}
}

// blipKV is a bucket whose first answer is lost: no responders, as while
// JetStream recovers after a reconnect.
type blipKV struct {
	jetstream.KeyValue
	blipped bool
}

func (b *blipKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if !b.blipped {
		b.blipped = true
		return nil, nats.ErrNoResponders
	}
	return b.KeyValue.Get(ctx, key)
}

// TestDurableRecordOfABucketMadeAgainIsLost: a record not found in a
// bucket made again since its reader began (by hand, or by another
// process whose mark is not written yet) is lost, where the same answer
// from the bucket the reader began with, after an answer lost on the way,
// is a record never written.
func TestDurableRecordOfABucketMadeAgainIsLost(t *testing.T) {
	ctx, topic := ordersTopic(t)
	_, d, err := topic.bindDurable(ctx, WatchOptions{Durable: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.keep.stop()
	k := d.keep

	k.kv = &blipKV{KeyValue: k.kv}
	rec, _, err := k.read(ctx)
	if err != nil || rec.Owner != "" {
		t.Errorf("after an answer lost, read %+v, %v; want a record never written", rec, err)
	}

	if err := topic.js.DeleteKeyValue(ctx, topic.bucket); err != nil {
		t.Fatal(err)
	}
	if _, err := topic.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: topic.bucket}); err != nil {
		t.Fatal(err)
	}
	rec, _, err = k.read(ctx)
	if err != nil || rec.Owner != lostOwner {
		t.Errorf("in a bucket made again, unmarked, read %+v, %v; want the record lost (owner %q)", rec, err, lostOwner)
	}
}

// noListStream is a stream whose consumers cannot be listed.
type noListStream struct{ jetstream.Stream }

func (noListStream) ListConsumers(context.Context) jetstream.ConsumerInfoLister { return noLister{} }

type noLister struct{}

func (noLister) Info() <-chan *jetstream.ConsumerInfo {
	c := make(chan *jetstream.ConsumerInfo)
	close(c)
	return c
}

func (noLister) Err() error { return context.DeadlineExceeded }

// TestDurableBucketMadeAgainIsMarkedAfterAFailedMark: a topic that makes
// its deleted bucket again, and fails to mark it so (the stream's
// consumers could not be listed), marks it at its next try, though the
// bucket exists by then: unmarked, the record of a position whose reader
// still held values would read as never written.
func TestDurableBucketMadeAgainIsMarkedAfterAFailedMark(t *testing.T) {
	ctx, topic := ordersTopic(t)
	w, _ := servedReader(ctx, t, topic, 10, 5)
	w.Stop() // its last value not done: its consumer keeps its deliveries
	defer func() {
		now, cancel := context.WithCancel(ctx)
		cancel()
		_ = w.Shutdown(now) // handed over at once
	}()
	// Another process's topic: the watcher's keeper does not share it.
	other, err := NewTopic(ctx, topic.js, "orders", JSON[int](), TopicOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Shutdown(ctx) }()
	if err := topic.js.DeleteKeyValue(ctx, topic.bucket); err != nil {
		t.Fatal(err)
	}
	stream := other.stream
	other.stream = noListStream{stream}
	if _, err := other.durables(ctx); err == nil {
		t.Fatal("durables made the bucket and marked it without listing the consumers")
	}
	other.stream = stream
	kv, err := other.durables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, remadeKey); err != nil {
		t.Errorf("the bucket made again is not marked so at the next try: %v", err)
	}
}

// TestDurableBucketOfPartitionsMadeAgainIsMarked: a partitioned topic's
// partitions share one bucket of records; the one that makes it again
// marks it so if another partition's durable consumer delivered values,
// though its own stream has none.
func TestDurableBucketOfPartitionsMadeAgainIsMarked(t *testing.T) {
	ctx, topic := ordersTopic(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	pt, err := NewPartitioned(ctx, topic.js, "parts", JSON[int](), func(v int) string { return "k" }, PartitionOptions{Partitions: 2, Topic: TopicOptions{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pt.Shutdown(ctx) }()
	p0 := pt.parts[0]
	if err := publisher(t, p0, PublisherOptions{}).Publish(ctx, 1); err != nil {
		t.Fatal(err)
	}
	w, err := p0.Watch(ctx, WatchOptions{Durable: "d", From: 1})
	if err != nil {
		t.Fatal(err)
	}
	now, cancel := context.WithCancel(ctx)
	cancel()
	defer func() { _ = w.Shutdown(now) }() // handed over at once
	if _, err := w.Next(ctx); err != nil { // held: its consumer keeps its delivery
		t.Fatal(err)
	}
	kv, err := topic.js.KeyValue(ctx, p0.bucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pt.parts[1].markRemade(ctx, kv); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, remadeKey); err != nil {
		t.Errorf("partition 1 made the bucket again unmarked, partition 0's reader holding a value: %v", err)
	}
}

// TestDurableBucketMadeFirstIsNotMarkedForOtherConsumers: a bucket made
// for the first time on a stream whose only consumer with deliveries is
// not a durable watcher's (an application's own) is not marked made
// again: marked, every new position's first reader would wait a takeover
// time and count its first values redelivered.
func TestDurableBucketMadeFirstIsNotMarkedForOtherConsumers(t *testing.T) {
	ctx, topic := ordersTopic(t)
	if err := publisher(t, topic, PublisherOptions{}).Publish(ctx, 1); err != nil {
		t.Fatal(err)
	}
	c, err := topic.stream.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "audit", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := c.Fetch(1)
	if err != nil {
		t.Fatal(err)
	}
	for m := range msgs.Messages() {
		if err := m.Ack(); err != nil {
			t.Fatal(err)
		}
	}
	kv, err := topic.durables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, remadeKey); err == nil {
		t.Error("a bucket made for the first time is marked made again: another consumer of the stream delivered values")
	}
}
