package ctrlruntime_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// logs collects a manager's log lines.
type logs struct {
	mu    sync.Mutex
	lines []string
}

// logger returns a logger that writes to l, at every verbosity up to 1
// (the events' own log lines).
func (l *logs) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 1})
}

// matching returns the lines that contain every one of parts.
func (l *logs) matching(parts ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
next:
	for _, line := range l.lines {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue next
			}
		}
		out = append(out, line)
	}
	return out
}

// newManager returns a manager that needs no apiserver as long as nothing
// reads through its client: no leader election, no metrics or health
// endpoints, and a config pointing at a port nothing listens on. It waits
// for its runnables for up to gracePeriod when it stops, so that a test
// can give a Provider's flush a failsafe bound below it.
func newManager(t *testing.T, l *logs) manager.Manager {
	t.Helper()
	grace := gracePeriod
	mgr, err := manager.New(&rest.Config{Host: "http://127.0.0.1:1"}, manager.Options{
		Logger:                  l.logger(),
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		GracefulShutdownTimeout: &grace,
	})
	if err != nil {
		t.Fatalf("manager.New: %v", err)
	}
	return mgr
}

// gracePeriod is the managers' GracefulShutdownTimeout: a failsafe, as
// is the flush bound below it that tests which flush many events set.
const gracePeriod = 2 * time.Minute

// run starts mgr and returns a function that stops it and waits until
// mgr.Start has returned, failing t if it returned an error.
func run(t *testing.T, mgr manager.Manager) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("mgr.Start: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// pod returns a reference-only pod in namespace "shop".
func pod(i int) *v1.Pod {
	name := fmt.Sprintf("web-%d", i)
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name)}}
}

// eventually polls cond every 5 ms until it reports true, for at most a
// minute: the writers run on goroutines of their own and offer nothing to
// wait on.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
