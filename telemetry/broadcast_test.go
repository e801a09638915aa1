package telemetry_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/telemetry"
	"github.com/heraldgo/herald/telemetry/internal/metrictest"
)

// TestBroadcaster reads every instrument of a broadcaster held up by a
// full Block watcher, and checks each against Stats, Incoming and the
// queues; the oldest value's age follows the bubble's clock.
func TestBroadcaster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		meter, reader := metrictest.NewMeter(t)
		b := broadcast.New[int](broadcast.Options{IncomingQueueLength: 1})
		defer b.Shutdown(ctx)
		reg, err := telemetry.Broadcaster(meter, "orders", b)
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()
		newest, _ := b.WatchWith(broadcast.WatchOptions{QueueLength: 1, Full: broadcast.DropNewest})
		oldest, _ := b.WatchWith(broadcast.WatchOptions{QueueLength: 1, Full: broadcast.DropOldest})
		block, _ := b.WatchWith(broadcast.WatchOptions{QueueLength: 2, Full: broadcast.Block})
		defer newest.Stop()
		defer oldest.Stop()
		defer block.Stop()

		// 1 and 2 fill block; 3 holds the distributor up on it, 4 waits
		// in the incoming queue and 5 finds it full.
		for v := 1; v <= 4; v++ {
			if v == 3 {
				time.Sleep(10 * time.Second)  // the bubble's clock: values 1 and 2 are 10 s old
				metrictest.Collect(t, reader) // a collection that sees 1 and 2 queued
				time.Sleep(5 * time.Second)
			}
			if err := b.Publish(ctx, v); err != nil {
				t.Fatal(err)
			}
		}
		if sent, _ := b.TryPublish(5); sent {
			t.Fatal("TryPublish(5) on a full incoming queue = true")
		}
		synctest.Wait() // the distributor waits for room in block
		time.Sleep(time.Second)

		common := []attribute.KeyValue{attribute.String("messaging.system", "herald"),
			attribute.String("messaging.destination.name", "orders")}
		age := func() float64 {
			return metrictest.Collect(t, reader, common...)["herald.broadcast.queue.oldest_age"].Value
		}
		got := metrictest.Collect(t, reader, common...)
		s := b.Stats()
		const msg = "{message}"
		metrictest.Check(t, got, map[string]metrictest.Point{
			"messaging.client.sent.messages{messaging.operation.name=publish}":                                metrictest.Counter(msg, s.Published),
			"messaging.client.sent.messages{error.type=incoming_queue_full,messaging.operation.name=publish}": metrictest.Counter(msg, s.DroppedIncoming),
			"herald.broadcast.delivered":                               metrictest.Counter(msg, s.Delivered),
			"herald.broadcast.dropped{herald.drop.reason=drop_newest}": metrictest.Counter(msg, s.DroppedNewest),
			"herald.broadcast.dropped{herald.drop.reason=drop_oldest}": metrictest.Counter(msg, s.DroppedOldest),
			"herald.broadcast.dropped{herald.drop.reason=shutdown}":    metrictest.Counter(msg, s.DroppedShutdown),
			"herald.broadcast.watchers":                                metrictest.UpDown("{watcher}", s.Watchers),
			"herald.broadcast.incoming.depth":                          metrictest.Gauge(msg, float64(b.Incoming())),
			"herald.broadcast.queue.depth":                             metrictest.Gauge(msg, float64(block.Backlog().Queued)),
			"herald.broadcast.queue.oldest_age":                        metrictest.Gauge("s", 6), // seen since the first collection, 6 s ago
		})
		if s.Published != 4 || s.DroppedIncoming != 1 || s.DroppedNewest != 2 || s.DroppedOldest != 2 || b.Incoming() != 1 {
			t.Errorf("Stats = %+v, Incoming %d: not the state the test means to build", s, b.Incoming())
		}

		// The ages are now block's alone. Once it reads 1, the value in
		// front, 2, was seen by the same collection (at 16 s), and 3
		// enters; once it reads 2 too, 3 is in front, seen first at 16 s.
		newest.Stop()
		oldest.Stop()
		if v, _ := block.Next(ctx); v != 1 {
			t.Fatalf("block read %d, want 1", v)
		}
		synctest.Wait()
		if got := age(); got != 6 {
			t.Errorf("oldest_age with 2 in front = %v, want 6", got)
		}
		if v, _ := block.Next(ctx); v != 2 {
			t.Fatalf("block read %d, want 2", v)
		}
		synctest.Wait()
		time.Sleep(2 * time.Second)
		if got := age(); got != 2 {
			t.Errorf("oldest_age with 3 in front, 2 s after it was seen = %v, want 2", got)
		}
		for range 2 { // 3 and 4
			_, _ = block.Next(ctx)
		}
		synctest.Wait()
		if got := age(); got != 0 {
			t.Errorf("oldest_age of an empty queue = %v, want 0", got)
		}
	})
}

// TestBroadcasterUnregister: after Unregister, a collection reads nothing
// of the broadcaster.
func TestBroadcasterUnregister(t *testing.T) {
	meter, reader := metrictest.NewMeter(t)
	b := broadcast.New[int](broadcast.Options{})
	defer b.Shutdown(context.Background())
	reg, err := telemetry.Broadcaster(meter, "orders", b)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(metrictest.Collect(t, reader)); got == 0 {
		t.Fatal("no points before Unregister")
	}
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
	if got := metrictest.Collect(t, reader); len(got) != 0 {
		t.Errorf("points after Unregister: %v", got)
	}
}

// TestNilMeter: a nil meter is an error, not a panic.
func TestNilMeter(t *testing.T) {
	b := broadcast.New[int](broadcast.Options{})
	defer b.Shutdown(context.Background())
	if _, err := telemetry.Broadcaster(nil, "orders", b); err == nil {
		t.Error("Broadcaster(nil meter) = nil error")
	}
}
