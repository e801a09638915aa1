package ctrlruntime

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/heraldgo/herald/k8sadapter"
	"github.com/heraldgo/herald/k8sadapter/events"
)

// DefaultShutdownTimeout bounds the flush when the manager stops. It is
// below the manager's default GracefulShutdownTimeout (30 s), which bounds
// how long the manager waits for its runnables.
const DefaultShutdownTimeout = 10 * time.Second

// Option configures New. Options apply in order; the last one wins.
type Option func(*config)

type config struct {
	client          kubernetes.Interface
	registerer      prometheus.Registerer
	shutdownTimeout time.Duration
	core            []k8sadapter.BroadcasterOption
	events          []events.Option
}

func defaultConfig() config {
	return config{registerer: metrics.Registry, shutdownTimeout: DefaultShutdownTimeout}
}

// WithClient sets the clientset the events are written with. The default
// is one on the manager's rest.Config and HTTP client, as the manager's own
// recorders use.
func WithClient(c kubernetes.Interface) Option {
	return func(cfg *config) { cfg.client = c }
}

// WithRegisterer sets where the Provider's metrics are registered
// (controller-runtime's metrics.Registry by default); nil registers none.
func WithRegisterer(r prometheus.Registerer) Option {
	return func(cfg *config) { cfg.registerer = r }
}

// WithShutdownTimeout bounds the flush when the manager stops
// (DefaultShutdownTimeout). Keep it below the manager's
// GracefulShutdownTimeout. Zero means the default; a negative value means
// no wait: what is still queued then is abandoned, logged and counted.
func WithShutdownTimeout(d time.Duration) Option {
	return func(cfg *config) {
		if d != 0 {
			cfg.shutdownTimeout = max(d, 0)
		}
	}
}

// WithCoreOptions passes opts to k8sadapter.NewBroadcaster, the core/v1
// broadcaster, after the Provider's own (k8sadapter.WithContext, which
// carries the manager's logger).
func WithCoreOptions(opts ...k8sadapter.BroadcasterOption) Option {
	return func(cfg *config) { cfg.core = append(cfg.core, opts...) }
}

// WithEventsOptions passes opts to events.NewBroadcaster, the
// events.k8s.io/v1 broadcaster.
func WithEventsOptions(opts ...events.Option) Option {
	return func(cfg *config) { cfg.events = append(cfg.events, opts...) }
}
