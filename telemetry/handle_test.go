package telemetry_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/handle"
	"github.com/heraldgo/herald/telemetry"
	"github.com/heraldgo/herald/telemetry/internal/metrictest"
)

// TestPool reads every instrument of a Pool that has handled values,
// dead-lettered one, retried and recovered from a panic, and holds a key
// whose handler has run for a minute with a value behind it.
func TestPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		meter, reader := metrictest.NewMeter(t)
		b := broadcast.New[int](broadcast.Options{})
		defer b.Shutdown(context.Background())
		w, _ := b.Watch()
		release := make(chan struct{})
		panicked := false
		p := handle.New(w, func(v int) int { return v % 10 }, func(ctx context.Context, v int) error {
			switch {
			case v == 3:
				return handle.Permanent(errors.New("refused"))
			case v == 4 && !panicked:
				panicked = true
				panic("once")
			case v == 7 || v == 17:
				<-release
			}
			return nil
		}, handle.Options{RetryMin: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		go func() {
			for range p.DeadLetters().All() {
			}
		}()
		reg, err := telemetry.Pool(meter, "billing", p)
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()
		for v := range 10 {
			_ = b.Publish(context.Background(), v)
		}
		_ = b.Publish(context.Background(), 17) // behind 7
		time.Sleep(time.Minute)                 // the bubble's clock: 7's handler has run a minute
		synctest.Wait()

		got := metrictest.Collect(t, reader, attribute.String("messaging.system", "herald"), attribute.String("messaging.client.id", "billing"))
		s := p.Stats()
		const v = "{value}"
		metrictest.Check(t, got, map[string]metrictest.Point{
			"herald.handle.received":                                metrictest.Counter(v, s.Received),
			"herald.handle.fates{herald.handle.fate=handled}":       metrictest.Counter(v, s.Handled),
			"herald.handle.fates{herald.handle.fate=dead_lettered}": metrictest.Counter(v, s.DeadLettered),
			"herald.handle.fates{herald.handle.fate=abandoned}":     metrictest.Counter(v, s.Abandoned),
			"herald.handle.poisoned":                                metrictest.Counter(v, s.Poisoned),
			"herald.handle.mixed":                                   metrictest.Counter(v, s.Mixed),
			"herald.handle.held{herald.handle.state=in_flight}":     metrictest.UpDown(v, s.InFlight),
			"herald.handle.held{herald.handle.state=waiting}":       metrictest.UpDown(v, s.Waiting),
			"herald.handle.held{herald.handle.state=backoff}":       metrictest.UpDown(v, s.Backoff),
			"herald.handle.retries":                                 metrictest.Counter("{attempt}", s.Retries),
			"herald.handle.panics{error.type=panic}":                metrictest.Counter("{call}", s.Panics),
			"herald.handle.keys":                                    metrictest.UpDown("{key}", s.Keys),
			"herald.handle.paused":                                  metrictest.Gauge("{pause}", 0),
			"herald.handle.pauses":                                  metrictest.Counter("{pause}", s.Pauses),
			"herald.handle.blocked.age":                             metrictest.Gauge("s", time.Minute.Seconds()),
		})
		if s.Handled != 8 || s.DeadLettered != 1 || s.Retries != 1 || s.Panics != 1 || s.InFlight != 1 || s.Waiting != 1 || s.Blocked == nil || s.Blocked.Key != 7 {
			t.Errorf("Stats = %+v: not the state the test means to build", s)
		}
		close(release)
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
