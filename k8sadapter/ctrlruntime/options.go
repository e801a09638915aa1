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
	permissionCheck PermissionCheck
	cacheSize       int // 0: the adapters' defaults
	leaderLock      *LeaderLock
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

// WithPermissionCheck configures the check, made when the manager starts
// the Provider, that the identity the events are written with may create
// and patch events in both APIs. Each permission missing is logged at
// error level, with the RBAC rule to add, and is in the metric
// herald_events_permission_missing. The check never holds up or fails the
// manager's start. By default it runs, for all namespaces, within
// DefaultPermissionCheckTimeout.
func WithPermissionCheck(c PermissionCheck) Option {
	return func(cfg *config) {
		c.Namespaces = append([]string(nil), c.Namespaces...)
		cfg.permissionCheck = c
	}
}

// WithCacheSize sets how many events each broadcaster remembers to fold
// repeats into counts: the LRU caches of the core/v1 correlator
// (record.CorrelatorOptions.LRUCacheSize, 4096 by default, as in
// client-go) and the events.k8s.io/v1 series cache (events.WithCacheSize,
// 4096 by default). An event whose key was forgotten is created again,
// with a count of 1, instead of patched: give a controller that records
// about more objects than that a larger cache (herald_events_evicted_total
// counts what the events.k8s.io/v1 cache forgot). Values below 1 mean the
// defaults.
//
// It is passed to the broadcasters before WithCoreOptions and
// WithEventsOptions: a k8sadapter.WithCorrelatorOptions there replaces the
// correlator options whole, cache size included (set LRUCacheSize in it
// then), and an events.WithCacheSize there wins.
func WithCacheSize(n int) Option {
	return func(cfg *config) { cfg.cacheSize = max(n, 0) }
}

// WithLeaderLock has the Provider record the events of l, the leader
// election's lock of its manager (see LeaderLock): through its core/v1
// broadcaster, flushed when the manager stops, after the last of them. A
// LeaderLock serves one Provider; New fails if l already serves another.
func WithLeaderLock(l *LeaderLock) Option {
	return func(cfg *config) { cfg.leaderLock = l }
}

// WithCoreOptions passes opts to k8sadapter.NewBroadcaster, the core/v1
// broadcaster, after the Provider's own (k8sadapter.WithContext, which
// carries the manager's logger, and the correlator options of
// WithCacheSize).
func WithCoreOptions(opts ...k8sadapter.BroadcasterOption) Option {
	return func(cfg *config) { cfg.core = append(cfg.core, opts...) }
}

// WithEventsOptions passes opts to events.NewBroadcaster, the
// events.k8s.io/v1 broadcaster, after the Provider's own (events.WithLogger
// and the events.WithCacheSize of WithCacheSize).
func WithEventsOptions(opts ...events.Option) Option {
	return func(cfg *config) { cfg.events = append(cfg.events, opts...) }
}
