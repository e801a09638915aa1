// Command prometheus is a service that serves herald's metrics to
// Prometheus: its broadcaster and correlator are registered with package
// telemetry on an OpenTelemetry meter whose reader is OpenTelemetry's
// Prometheus exporter, and /metrics serves what it reads.
//
//	go run .                       # serves http://127.0.0.1:9464/metrics until interrupted
//	curl -s localhost:9464/metrics | grep herald
//
// It is a module of its own so that the Prometheus exporter and client
// stay out of the telemetry module's requirements.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/correlate"
	"github.com/heraldgo/herald/telemetry"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9464", "where to serve /metrics")
	orders := flag.Int("orders", 10, "orders to publish at the start")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	s, err := start(ln)
	if err != nil {
		log.Fatal(err)
	}
	if err := s.publish(ctx, *orders); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("serving http://%s/metrics (interrupt to stop)\n", ln.Addr())
	<-ctx.Done()
	if err := s.shutdown(context.Background()); err != nil {
		log.Fatal(err)
	}
}

// An Order is what the service publishes.
type Order struct {
	ID     int
	Status string
}

// A service is a broadcaster of orders with one watcher, a correlator of
// their statuses, and the HTTP server that serves their metrics.
type service struct {
	orders   *broadcast.Broadcaster[Order]
	audit    *broadcast.Watcher[Order]
	statuses *correlate.Correlator[string, string]
	provider *sdkmetric.MeterProvider
	regs     []metric.Registration
	server   *http.Server
	served   chan error
}

// start builds the service and serves /metrics on ln.
func start(ln net.Listener) (*service, error) {
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry))
	if err != nil {
		return nil, err
	}
	s := &service{
		orders:   broadcast.New[Order](broadcast.Options{}),
		statuses: correlate.New(func(s string) string { return s }, correlate.Options[string, string]{}),
		provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter)),
		served:   make(chan error, 1),
	}
	if s.audit, err = s.orders.Watch(); err != nil {
		return nil, err
	}
	meter := s.provider.Meter("shop")
	for _, register := range []func() (metric.Registration, error){
		func() (metric.Registration, error) { return telemetry.Broadcaster(meter, "orders", s.orders) },
		func() (metric.Registration, error) { return telemetry.Correlator(meter, "order-status", s.statuses) },
	} {
		reg, err := register()
		if err != nil {
			return nil, errors.Join(err, s.shutdown(context.Background()))
		}
		s.regs = append(s.regs, reg)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	s.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { s.served <- s.server.Serve(ln) }()
	return s, nil
}

// publish publishes n orders, correlates their statuses (every third is
// a repeat of "paid"), and waits until the watcher has them queued.
func (s *service) publish(ctx context.Context, n int) error {
	for i := range n {
		status := []string{"placed", "paid", "paid"}[i%3]
		if err := s.orders.Publish(ctx, Order{ID: i, Status: status}); err != nil {
			return err
		}
		_, _ = s.statuses.Correlate(status)
	}
	return s.orders.Flush(ctx)
}

// shutdown stops serving, unregisters the metrics and shuts the
// broadcaster and the meter provider down.
func (s *service) shutdown(ctx context.Context) error {
	var errs []error
	if s.server != nil {
		errs = append(errs, s.server.Shutdown(ctx))
		if err := <-s.served; !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	for _, reg := range s.regs {
		errs = append(errs, reg.Unregister())
	}
	if s.audit != nil {
		s.audit.Stop()
	}
	errs = append(errs, s.orders.Shutdown(ctx), s.provider.Shutdown(ctx))
	return errors.Join(errs...)
}
