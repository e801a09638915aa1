package ctrlruntime

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// What client-go's leader elector passes to its lock's RecordEvent when
// it wins the lease and when it stops leading (k8s.io/client-go/tools/
// leaderelection); the lock records "<identity> <what>" about the lease.
const (
	becameLeader   = "became leader"
	stoppedLeading = "stopped leading"
)

// LeaderLock is a lock for a manager's leader election whose events a
// Provider records. The manager records its leader election's events
// ("<identity> became leader", "<identity> stopped leading", core/v1 events
// about the Lease) through a recorder of its own: controller-runtime v0.24
// and v0.25 build the lock in manager.New, with a core/v1 recorder of the
// manager's broadcaster, and offer no way to give it another but a lock
// of one's own (manager.Options.LeaderElectionResourceLockInterface).
// NewLeaderLock builds the lock as the manager would, with a recorder
// that forwards to the Provider New binds it to (WithLeaderLock):
//
//	lock, err := ctrlruntime.NewLeaderLock(cfg, leaderelection.Options{
//		LeaderElectionID:        "my-controller",
//		LeaderElectionNamespace: "my-namespace",
//		RenewDeadline:           10 * time.Second, // the manager's RenewDeadline
//	})
//	…
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
//		LeaderElection:                      true, // without it, the manager ignores the lock
//		LeaderElectionResourceLockInterface: lock,
//	})
//	…
//	events, err := ctrlruntime.New(mgr, ctrlruntime.WithLeaderLock(lock))
//
// The events then go through the Provider's core/v1 broadcaster, are
// counted in its Stats and metrics, and are flushed: the manager records
// "stopped leading" after it has stopped its runnables, the Provider's
// among them, so while the manager leads, the Provider flushes its
// core/v1 broadcaster when the manager stops it, and shuts it down once
// the lock has recorded "stopped leading", within WithShutdownTimeout
// again; mgr.Start returns after that.
//
// Until New binds it, the lock records nothing. Its zero value is not
// usable: create one with NewLeaderLock. It is safe for concurrent use.
type LeaderLock struct {
	lock resourcelock.Interface // controller-runtime's, recording through lockRecorder
	name string                 // the name of its recorder: the lock's identity, as the manager's own

	mu      sync.Mutex // guards p, leading, release
	p       *Provider  // nil until New binds the lock
	leading bool       // between "became leader" and "stopped leading"
	release func()     // the Provider's last shutdown, held until "stopped leading"
}

// NewLeaderLock returns a LeaderLock built by controller-runtime's
// leaderelection.NewResourceLock with cfg and opts, as manager.New builds
// its own from the manager's options: pass the manager's config (or its
// LeaderElectionConfig), and in opts what the manager's options would say
// (LeaderElectionID is required; LeaderElectionResourceLock defaults to
// leases; LeaderElectionNamespace, outside a cluster, is required too).
// opts.LeaderElection is set: the lock is for a manager that elects a
// leader. Its events are written by the Provider's client, to the
// manager's cluster.
func NewLeaderLock(cfg *rest.Config, opts leaderelection.Options) (*LeaderLock, error) {
	opts.LeaderElection = true
	l := &LeaderLock{}
	lock, err := leaderelection.NewResourceLock(cfg, lockRecorders{l: l}, opts)
	if err != nil {
		return nil, fmt.Errorf("ctrlruntime: leader election lock: %w", err)
	}
	l.lock = lock
	return l, nil
}

// Get implements resourcelock.Interface: controller-runtime's lock's.
func (l *LeaderLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return l.lock.Get(ctx)
}

// Create implements resourcelock.Interface: controller-runtime's lock's.
func (l *LeaderLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.lock.Create(ctx, ler)
}

// Update implements resourcelock.Interface: controller-runtime's lock's.
func (l *LeaderLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.lock.Update(ctx, ler)
}

// Identity implements resourcelock.Interface: the lock's holder identity,
// host name and a UUID, also the source component of its events.
func (l *LeaderLock) Identity() string { return l.lock.Identity() }

// Describe implements resourcelock.Interface: namespace/name of the lease.
func (l *LeaderLock) Describe() string { return l.lock.Describe() }

// RecordEvent implements resourcelock.Interface: it records "<identity>
// <s>" about the lease through the Provider's core/v1 recorder named by
// the identity, as controller-runtime's lock does through the manager's.
// After "stopped leading" it runs the Provider's last shutdown, if the
// Provider left it to the end of the leadership (see LeaderLock), on the
// caller's goroutine: the manager's leader election, which the manager
// waits for before mgr.Start returns.
func (l *LeaderLock) RecordEvent(s string) {
	l.lock.RecordEvent(s)
	var release func()
	l.mu.Lock()
	switch s {
	case becameLeader:
		l.leading = true
	case stoppedLeading:
		l.leading, release, l.release = false, l.release, nil
	}
	l.mu.Unlock()
	if release != nil {
		release()
	}
}

// bind makes p the Provider that records the lock's events.
func (l *LeaderLock) bind(p *Provider) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p != nil && l.p != p {
		return errors.New("ctrlruntime: the LeaderLock serves another Provider")
	}
	l.p = p
	return nil
}

// unbind undoes bind, for a New that failed after it.
func (l *LeaderLock) unbind() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.p = nil
}

// holdShutdown leaves release, the Provider's last shutdown, to the end
// of the leadership, if the manager leads through the lock: it reports
// whether it took it.
func (l *LeaderLock) holdShutdown(release func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.leading {
		return false
	}
	l.release = release
	return true
}

// recorder returns the recorder of the lock's events: the Provider's, or
// nil before New bound the lock.
func (l *LeaderLock) recorder() record.EventRecorder {
	l.mu.Lock()
	p := l.p
	l.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.GetEventRecorderFor(l.name)
}

// lockRecorders is the recorder.Provider the lock is built with: the
// manager, and so the Provider, do not exist yet, so the lock's recorder
// forwards to the Provider New binds the lock to. GetEventRecorder
// returns another type in controller-runtime v0.25 than in v0.24: the
// embedded interface, left nil, provides it with the type of the version
// built against. NewResourceLock asks only for GetEventRecorderFor, in
// both.
type lockRecorders struct {
	recorder.Provider
	l *LeaderLock
}

// GetEventRecorderFor returns the lock's recorder; NewResourceLock names
// it by the lock's identity, before the lock is shared.
func (r lockRecorders) GetEventRecorderFor(name string) record.EventRecorder {
	r.l.name = name
	return lockRecorder{r.l}
}

// lockRecorder is the recorder of the lock's events: the Provider's
// core/v1 recorder, found at each event (two a leadership), so that none
// starts the Provider before the manager does.
type lockRecorder struct{ l *LeaderLock }

func (r lockRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	if rec := r.l.recorder(); rec != nil {
		rec.Event(object, eventtype, reason, message)
	}
}

func (r lockRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	if rec := r.l.recorder(); rec != nil {
		rec.Eventf(object, eventtype, reason, messageFmt, args...)
	}
}

func (r lockRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	if rec := r.l.recorder(); rec != nil {
		rec.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
	}
}
