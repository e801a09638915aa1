package ctrlruntime_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"

	"github.com/heraldgo/herald/k8sadapter/ctrlruntime"
)

// TestCacheSize: WithCacheSize reaches both broadcasters. With room for
// one event, a repeat that comes after another event is no longer
// folded into a count: core/v1 creates it anew instead of patching, and
// the events.k8s.io/v1 cache forgets the series (Evicted).
func TestCacheSize(t *testing.T) {
	var l logs
	mgr := newManager(t, &l)
	p, _ := newProvider(t, mgr, ctrlruntime.WithCacheSize(1))
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	core, ev := p.GetEventRecorderFor("a"), p.GetEventRecorder("a")

	// One at a time, each written before the next: a repeat recorded
	// while its first still waits would fold into it, cache or not.
	for i, o := range []int{1, 2, 1} {
		core.Event(pod(o), v1.EventTypeWarning, "BackOff", "back-off")
		ev.Eventf(pod(o), nil, v1.EventTypeWarning, "BackOff", "Restart", "back-off")
		eventually(t, "the events' fates", func() bool {
			s := p.Stats()
			return s.Core.Created+s.Core.Patched == uint64(i+1) && s.Events.Created+s.Events.Patched == uint64(i+1)
		})
	}
	s := p.Stats()
	if s.Core.Created != 3 || s.Core.Patched != 0 {
		t.Errorf("core/v1: created %d, patched %d; want the repeat created anew: 3, 0", s.Core.Created, s.Core.Patched)
	}
	if s.Events.Created != 3 || s.Events.Evicted != 2 {
		t.Errorf("events.k8s.io/v1: created %d, evicted %d; want 3, 2", s.Events.Created, s.Events.Evicted)
	}
}

// TestLeaderLockServesOneProvider: a LeaderLock records the events of
// one Provider's manager; New refuses it for a second.
func TestLeaderLockServesOneProvider(t *testing.T) {
	lock, err := ctrlruntime.NewLeaderLock(&rest.Config{Host: "http://127.0.0.1:1"},
		leaderelection.Options{LeaderElectionID: "my-controller", LeaderElectionNamespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := lock.Describe(), "shop/my-controller"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
	var l logs
	newProvider(t, newManager(t, &l), ctrlruntime.WithLeaderLock(lock))
	_, err = ctrlruntime.New(newManager(t, &l), ctrlruntime.WithClient(newClient(nil)), ctrlruntime.WithRegisterer(prometheus.NewRegistry()),
		ctrlruntime.WithLeaderLock(lock))
	if err == nil {
		t.Error("New with a LeaderLock serving another Provider succeeded")
	}
}
