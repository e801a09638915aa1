package telemetry_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/correlate"
	"github.com/heraldgo/herald/telemetry"
)

// A broadcaster's counters and queues, read by a manual reader as a
// Prometheus or OTLP exporter's reader would read them.
func ExampleBroadcaster() {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(ctx)

	b := broadcast.New[string](broadcast.Options{})
	defer b.Shutdown(ctx)
	reg, err := telemetry.Broadcaster(provider.Meter("shop"), "orders", b)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Unregister()

	w, _ := b.Watch()
	defer w.Stop()
	for _, v := range []string{"order 1", "order 2", "order 3"} {
		_ = b.Publish(ctx, v)
	}
	_ = b.Flush(ctx) // the three values are in w's queue
	_, _ = w.Next(ctx)

	show(reader, "messaging.client.sent.messages", "herald.broadcast.delivered",
		"herald.broadcast.watchers", "herald.broadcast.queue.depth")
	// Output:
	// messaging.client.sent.messages{error.type=incoming_queue_full messaging.destination.name=orders messaging.operation.name=publish messaging.system=herald} 0
	// messaging.client.sent.messages{messaging.destination.name=orders messaging.operation.name=publish messaging.system=herald} 3
	// herald.broadcast.delivered{messaging.destination.name=orders messaging.system=herald} 3
	// herald.broadcast.watchers{messaging.destination.name=orders messaging.system=herald} 1
	// herald.broadcast.queue.depth{messaging.destination.name=orders messaging.system=herald} 2
}

// A correlator's results by key, and the repeats it combined.
func ExampleCorrelator() {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(ctx)

	c := correlate.New(func(s string) string { return s }, correlate.Options[string, string]{})
	reg, err := telemetry.Correlator(provider.Meter("shop"), "disks", c)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Unregister()
	for _, e := range []string{"disk full", "disk full", "disk full", "disk slow"} {
		_, _ = c.Correlate(e)
	}

	show(reader, "herald.correlate.results")
	// Output:
	// herald.correlate.results{herald.correlate.key=new messaging.destination.name=disks} 2
	// herald.correlate.results{herald.correlate.key=repeat messaging.destination.name=disks} 2
}

// show prints the points of the named instruments, in the order named,
// each instrument's points sorted.
func show(reader *sdkmetric.ManualReader, names ...string) {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		fmt.Println(err)
		return
	}
	lines := make([][]string, len(names))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			i := slices.Index(names, m.Name)
			if i < 0 {
				continue
			}
			var pts []metricdata.DataPoint[int64]
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				pts = d.DataPoints
			case metricdata.Gauge[int64]:
				pts = d.DataPoints
			}
			for _, p := range pts {
				var attrs []string
				for _, kv := range p.Attributes.ToSlice() {
					attrs = append(attrs, string(kv.Key)+"="+kv.Value.String())
				}
				lines[i] = append(lines[i], fmt.Sprintf("%s{%s} %d", m.Name, strings.Join(attrs, " "), p.Value))
			}
		}
	}
	for _, l := range lines {
		slices.Sort(l)
		fmt.Println(strings.Join(l, "\n"))
	}
}
