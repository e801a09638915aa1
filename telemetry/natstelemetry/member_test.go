package natstelemetry_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
	"github.com/heraldgo/herald/natsbridge/natstest"
	"github.com/heraldgo/herald/telemetry/internal/metrictest"
	"github.com/heraldgo/herald/telemetry/natstelemetry"
)

// TestMember reads every instrument of a group member that read both
// partitions of a topic alone, then handed one over to a member that
// joined, and checks each against its counters.
func TestMember(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	meter, reader := metrictest.NewMeter(t)
	srv := natstest.Embedded(t, embedded.Options{})
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	pt, err := natsbridge.NewPartitioned(ctx, js, "jobs", natsbridge.JSON[int](), strconv.Itoa,
		natsbridge.PartitionOptions{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pt.Shutdown(context.Background())
	a, err := pt.Join(ctx, "workers", natsbridge.GroupOptions{Member: "a", Takeover: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	reg, err := natstelemetry.Member(meter, pt, a)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	if _, err := natstelemetry.Member(meter, pt, a); err == nil {
		t.Error("a second registration of the member was accepted")
	}
	b, err := pt.Join(ctx, "workers", natsbridge.GroupOptions{Member: "b", Takeover: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	for a.Stats().Handovers == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("a never handed a partition over: %+v", a.Stats())
		case <-time.After(20 * time.Millisecond): // polling the member's progress
		}
	}

	got := metrictest.Collect(t, reader, attribute.String("messaging.system", "nats"),
		attribute.String("messaging.destination.name", "jobs"),
		attribute.String("messaging.consumer.group.name", "workers"), attribute.String("messaging.client.id", "a"))
	s := a.Stats()
	const msg = "{message}"
	metrictest.Check(t, got, map[string]metrictest.Point{
		"herald.nats.member.partitions":                           metrictest.Gauge("{partition}", float64(len(s.Partitions))),
		"herald.nats.member.members":                              metrictest.Gauge("{member}", float64(s.Members)),
		"herald.nats.member.rebalances":                           metrictest.Counter("{rebalance}", s.Rebalances),
		"herald.nats.member.handovers":                            metrictest.Counter("{partition}", s.Handovers),
		"herald.nats.member.handover.duration":                    metrictest.Gauge("s", s.HandoverTime.Seconds()),
		"herald.nats.member.redelivered":                          metrictest.Counter(msg, s.Redelivered),
		"herald.nats.member.handed_back":                          metrictest.Counter(msg, s.HandedBack),
		"herald.nats.member.dropped{herald.drop.reason=gap}":      metrictest.Counter(msg, s.Gaps),
		"herald.nats.member.dropped{herald.drop.reason=poisoned}": metrictest.Counter(msg, s.Poisoned),
	})
	if len(s.Partitions) != 1 || s.Members != 2 || s.Rebalances < 2 || s.Handovers != 1 || s.HandoverTime <= 0 {
		t.Errorf("Stats = %+v: not the state the test means to build", s)
	}
}
