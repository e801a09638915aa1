// Command telemetry uses herald's telemetry module as a module outside the
// repository does, with herald got by version from a module proxy:
// .ci/install-check builds and runs it. It registers a broadcaster with an
// OpenTelemetry meter and reads its instruments back.
package main

import (
	"context"
	"fmt"
	"os"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/telemetry"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "telemetry:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(ctx)

	b := broadcast.New[string](broadcast.Options{})
	reg, err := telemetry.Broadcaster(provider.Meter("install-check"), "orders", b)
	if err != nil {
		return err
	}
	defer reg.Unregister()
	w, err := b.Watch()
	if err != nil {
		return err
	}
	defer w.Stop()
	if err := b.Publish(ctx, "order 1"); err != nil {
		return err
	}
	if err := b.Flush(ctx); err != nil {
		return err
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return err
	}
	var delivered int64 = -1
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "herald.broadcast.delivered" {
				delivered = s.DataPoints[0].Value
			}
		}
	}
	if delivered != 1 {
		return fmt.Errorf("herald.broadcast.delivered = %d, want 1", delivered)
	}
	fmt.Println("telemetry: herald.broadcast.delivered", delivered)
	return b.Shutdown(ctx)
}
