package ctrlruntime

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	clientevents "k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/heraldgo/herald/k8sadapter"
	"github.com/heraldgo/herald/k8sadapter/events"
)

// Provider hands out herald's event recorders for a controller-runtime
// manager and owns the two broadcasters behind them, one per event API.
// Its zero value is not usable: create one with New. It is safe for
// concurrent use.
type Provider struct {
	scheme     *runtime.Scheme
	logger     logr.Logger
	client     kubernetes.Interface
	cfg        config
	unregister func() // removes the metrics; nil without a registerer
	perms      permissions

	mu     sync.Mutex // guards core and events, nil until started
	core   *k8sadapter.EventBroadcaster
	events *events.EventBroadcaster
}

// Stats is what happened to the events of each API. Each field's
// counters add up as their type's documentation says.
type Stats struct {
	// Core counts the events of GetEventRecorderFor's recorders (core/v1).
	Core k8sadapter.Stats
	// Events counts the events of GetEventRecorder's recorders
	// (events.k8s.io/v1).
	Events events.Stats
}

// New returns a Provider for mgr and adds to mgr the runnable that starts
// the Provider's broadcasters with the manager and flushes them when the
// manager stops (see the package documentation for the order). It
// registers the Provider's metrics, in controller-runtime's metrics
// registry unless WithRegisterer says otherwise.
//
// It fails if the events client cannot be built, if the metrics are
// already registered (one Provider per registry at a time: a Provider
// unregisters them when it shuts down), if the LeaderLock of
// WithLeaderLock serves another Provider, or if mgr no longer accepts
// runnables.
func New(mgr manager.Manager, opts ...Option) (*Provider, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	p := &Provider{
		scheme: mgr.GetScheme(),
		// The name the manager gives its own recorders' logger.
		logger: mgr.GetLogger().WithName("events"),
		client: cfg.client,
		cfg:    cfg,
	}
	if p.client == nil {
		c, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
		if err != nil {
			return nil, fmt.Errorf("ctrlruntime: events client: %w", err)
		}
		p.client = c
	}
	if err := p.register(); err != nil {
		return nil, err
	}
	if err := p.add(mgr); err != nil {
		if p.unregister != nil {
			p.unregister()
		}
		return nil, err
	}
	return p, nil
}

// register registers the Provider's metrics with the configured
// registerer, if any, and sets unregister.
func (p *Provider) register() error {
	reg := p.cfg.registerer
	if reg == nil {
		return nil
	}
	c := newCollector(p)
	if err := reg.Register(c); err != nil {
		return fmt.Errorf("ctrlruntime: register metrics: %w", err)
	}
	var once sync.Once
	p.unregister = func() { once.Do(func() { reg.Unregister(c) }) }
	return nil
}

// add binds the LeaderLock, if any, and adds the Provider's runnable to
// mgr.
func (p *Provider) add(mgr manager.Manager) error {
	l := p.cfg.leaderLock
	if l != nil {
		if err := l.bind(p); err != nil {
			return err
		}
	}
	if err := mgr.Add(&runnable{p: p, cache: mgr.GetCache()}); err != nil {
		if l != nil {
			l.unbind()
		}
		return fmt.Errorf("ctrlruntime: add to manager: %w", err)
	}
	return nil
}

// GetEventRecorderFor returns a core/v1 event recorder whose events have
// source component name: the manager's method of the same name, with
// herald's k8sadapter behind it. The recorder is also a
// record.EventRecorderLogger.
func (p *Provider) GetEventRecorderFor(name string) record.EventRecorder {
	core, _ := p.start()
	return core.NewRecorder(p.scheme, v1.EventSource{Component: name})
}

// GetEventRecorder returns an events.k8s.io/v1 event recorder whose events
// have reporting controller name (and reporting instance name-<host name>):
// the manager's method of the same name, with herald's k8sadapter/events
// behind it. The recorder is also an events.EventRecorderLogger.
func (p *Provider) GetEventRecorder(name string) clientevents.EventRecorder {
	_, ev := p.start()
	return ev.NewRecorder(p.scheme, name)
}

// Stats returns a snapshot of both broadcasters' counters; zero before
// they started.
func (p *Provider) Stats() Stats {
	p.mu.Lock()
	core, ev := p.core, p.events
	p.mu.Unlock()
	if core == nil {
		return Stats{}
	}
	return Stats{Core: core.Stats(), Events: ev.Stats()}
}

// Shutdown flushes and stops both broadcasters, bounded by ctx, and
// unregisters the metrics. The manager calls it when it stops; call it
// yourself only for a manager that is never started. It returns ctx.Err()
// if ctx ended before every event was written; what was left is counted in
// Stats as abandoned. Events recorded afterwards are refused, logged and
// counted. It is idempotent.
func (p *Provider) Shutdown(ctx context.Context) error {
	core, ev := p.start()
	// Both flush at once: a slow apiserver costs the manager's shutdown one
	// timeout, not two. The goroutine ends before Shutdown returns.
	coreErr := make(chan error, 1)
	go func() { coreErr <- core.ShutdownContext(ctx) }()
	err := ev.ShutdownContext(ctx)
	if cerr := <-coreErr; err == nil {
		err = cerr
	}
	if p.unregister != nil {
		p.unregister()
	}
	return err
}

// start starts the broadcasters, once, and returns them.
func (p *Provider) start() (*k8sadapter.EventBroadcaster, *events.EventBroadcaster) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.core != nil {
		return p.core, p.events
	}
	// The context carries the logger and is never cancelled: the
	// broadcasters end with Shutdown, after their flush. (A cancelled
	// WithContext context would shut the core/v1 broadcaster down at once,
	// and a cancelled recording context would abandon the events.k8s.io/v1
	// queue.)
	logged := logr.NewContext(context.Background(), p.logger)

	coreOpts := []k8sadapter.BroadcasterOption{k8sadapter.WithContext(logged)}
	eventsOpts := []events.Option{events.WithLogger(p.logger)}
	if n := p.cfg.cacheSize; n > 0 {
		coreOpts = append(coreOpts, k8sadapter.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: n}))
		eventsOpts = append(eventsOpts, events.WithCacheSize(n))
	}
	p.core = k8sadapter.NewBroadcaster(append(coreOpts, p.cfg.core...)...)
	p.core.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: p.client.CoreV1().Events("")})
	p.core.StartStructuredLogging(1)

	p.events = events.NewBroadcaster(&clientevents.EventSinkImpl{Interface: p.client.EventsV1()},
		append(eventsOpts, p.cfg.events...)...)
	// It cannot fail: the broadcaster is new and its sink is not nil.
	if err := p.events.StartRecordingToSinkWithContext(logged); err != nil {
		p.logger.Error(err, "Unable to start recording events.k8s.io/v1 events")
	}
	// StartStructuredLogging would log to klog's global logger, as
	// client-go's does; StartLogging takes the manager's.
	if _, err := p.events.StartLogging(p.logger.V(1)); err != nil {
		p.logger.Error(err, "Unable to log events.k8s.io/v1 events")
	}
	return p.core, p.events
}

// runnable is what New adds to the manager: it starts the broadcasters
// with the manager and flushes them when the manager stops.
//
// It reports the manager's cache (GetCache), which makes the manager file
// it with its caches: those start before the controllers and stop after
// them, once every Reconcile has returned (controller-runtime v0.24 and
// v0.25 stop, in order, the other runnables, the leader-election ones such
// as controllers, the caches, the webhooks, the HTTP servers). Filed with
// the other runnables, it would stop first, and an event recorded by a
// controller while the manager stops would be refused. Its readiness check
// is the manager's cache sync, which the manager waits for anyway.
type runnable struct {
	p     *Provider
	cache cache.Cache
}

// Start starts the broadcasters, checks the permission to write events
// (see WithPermissionCheck), waits for the manager to stop, and flushes.
// A flush cut short by the shutdown timeout is logged with what it left;
// Start returns nil either way, so that the manager's start and shutdown
// go on quietly.
func (r *runnable) Start(ctx context.Context) error {
	r.p.start()
	r.p.checkPermissions(ctx)
	<-ctx.Done()
	r.p.stop()
	return nil
}

// stop is the flush when the manager stops: both broadcasters shut down,
// within the shutdown timeout. While the manager leads through the
// Provider's LeaderLock, the core/v1 broadcaster is flushed instead, and
// shut down once the lock has recorded "stopped leading", which the
// manager's leader election does after the runnables stopped.
func (p *Provider) stop() {
	timeout := p.cfg.shutdownTimeout
	last := func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		p.logUnwritten(p.Shutdown(ctx), timeout)
	}
	if l := p.cfg.leaderLock; l == nil || !l.holdShutdown(last) {
		last()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	p.logUnwritten(p.flushLeading(ctx), timeout)
}

// flushLeading shuts down the events.k8s.io/v1 broadcaster and flushes
// the core/v1 one, bounded by ctx, at once.
func (p *Provider) flushLeading(ctx context.Context) error {
	core, ev := p.start()
	coreErr := make(chan error, 1)
	go func() { coreErr <- core.Flush(ctx) }() // ends before flushLeading returns
	err := ev.ShutdownContext(ctx)
	if cerr := <-coreErr; err == nil {
		err = cerr
	}
	return err
}

// logUnwritten logs a flush cut short by the shutdown timeout, with what
// it left.
func (p *Provider) logUnwritten(err error, timeout time.Duration) {
	if err == nil {
		return
	}
	s := p.Stats()
	p.logger.Error(err, "Not every event was written before the shutdown timeout", "timeout", timeout,
		"abandoned", s.Core.Abandoned+s.Events.Abandoned)
}

// GetCache returns the manager's cache; see runnable.
func (r *runnable) GetCache() cache.Cache { return r.cache }
