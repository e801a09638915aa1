package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/heraldgo/herald/k8sadapter/ctrlruntime"
)

// leaderEvents returns the messages of the leader election's events
// stored in namespace ns ("<identity> became leader", "<identity> stopped
// leading"), each with the source component of its recorder.
func leaderEvents(t *testing.T, ns string) []string {
	var out []string
	for _, e := range stored(t, ns) {
		if e.Reason == "LeaderElection" && e.InvolvedObject.Kind == "Lease" {
			out = append(out, e.Source.Component+": "+e.Message)
		}
	}
	slices.Sort(out)
	return out
}

// leaderManager returns a manager that elects a leader with lock in
// namespace ns, or, if lock is nil, with the manager's own lock there.
func leaderManager(t *testing.T, ns string, lock resourcelock.Interface, logs *managerLogs) manager.Manager {
	t.Helper()
	opts := manager.Options{
		Logger:                  logs.logger(),
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		LeaderElection:          true,
		LeaderElectionID:        "noticer",
		LeaderElectionNamespace: ns,
	}
	if lock != nil {
		opts.LeaderElectionResourceLockInterface = lock
	}
	mgr, err := manager.New(server.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// TestControllerRuntimeLeaderElectionEvents: a manager that elects a
// leader with ctrlruntime.NewLeaderLock records its leader election's
// events through herald's Provider. When mgr.Start returns, both are
// stored ("became leader", and "stopped leading", which the manager
// records after it stopped its runnables), counted in the Provider's
// Stats, with the lock's identity as source, as the manager's own lock
// records them; and no error was logged by herald. With the manager's own
// lock, the test logs what the manager's recorders stored.
func TestControllerRuntimeLeaderElectionEvents(t *testing.T) {
	t.Run("herald", func(t *testing.T) {
		ns := fmt.Sprintf("leader-herald-%d", namespaces.Add(1))
		createNamespace(t, ns)
		lock, err := ctrlruntime.NewLeaderLock(server.Config, leaderelection.Options{
			LeaderElectionID: "noticer", LeaderElectionNamespace: ns, RenewDeadline: 10 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		logs := &managerLogs{}
		mgr := leaderManager(t, ns, lock, logs)
		p, err := ctrlruntime.New(mgr, ctrlruntime.WithLeaderLock(lock), ctrlruntime.WithRegisterer(prometheus.NewRegistry()))
		if err != nil {
			t.Fatal(err)
		}
		stop := runManager(t, mgr)
		<-mgr.Elected()
		stop()

		id := lock.Identity()
		want := []string{id + ": " + id + " became leader", id + ": " + id + " stopped leading"}
		if got := leaderEvents(t, ns); !slices.Equal(got, want) {
			t.Errorf("leader election's events stored: %q, want %q", got, want)
		}
		if s := p.Stats().Core; s.Recorded != 2 || s.Created != 2 || s.DroppedClosed != 0 {
			t.Errorf("core/v1 Stats = %+v, want 2 recorded, 2 created, none refused", s)
		}
		if errs := logs.matching("events", `"error"=`); len(errs) > 0 {
			t.Errorf("herald logged errors:\n%s", strings.Join(errs, "\n"))
		}
	})
	t.Run("controller-runtime", func(t *testing.T) {
		ns := fmt.Sprintf("leader-clientgo-%d", namespaces.Add(1))
		createNamespace(t, ns)
		mgr := leaderManager(t, ns, nil, &managerLogs{})
		stop := runManager(t, mgr)
		<-mgr.Elected()
		stop()
		t.Logf("the manager's own recorder stored, when mgr.Start returned: %q", leaderEvents(t, ns))
	})
}
