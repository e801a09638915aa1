package k8sadapter_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/internal/testkit"
	"github.com/heraldgo/herald/k8sadapter"
)

// failsafe bounds waits that should end at once; reaching it is a failure.
const failsafe = 20 * time.Second

// quiet keeps a broadcaster's log lines out of the test output.
var quiet = k8sadapter.WithContext(klog.NewContext(context.Background(), logr.Discard()))

// newBroadcaster returns a broadcaster shut down (and joined) when the test
// ends.
func newBroadcaster(t *testing.T, opts ...k8sadapter.BroadcasterOption) *k8sadapter.EventBroadcaster {
	t.Helper()
	e := k8sadapter.NewBroadcaster(append([]k8sadapter.BroadcasterOption{quiet}, opts...)...)
	t.Cleanup(func() { join(t, e) })
	return e
}

// join shuts e down and waits for every goroutine it started.
func join(t *testing.T, e *k8sadapter.EventBroadcaster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	if err := e.ShutdownContext(ctx); err != nil {
		t.Errorf("ShutdownContext: %v", err)
	}
}

func pod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "baz", UID: types.UID("uid-" + name)}}
}

func recorder(e *k8sadapter.EventBroadcaster) record.EventRecorderLogger {
	return e.NewRecorder(scheme.Scheme, v1.EventSource{Component: "eventTest", Host: "node-1"})
}

// call is one call a scriptSink received.
type call struct {
	verb  string // "create", "patch" or "update"
	event *v1.Event
	patch string
}

// scriptSink is a record.EventSink whose answers a test scripts. By default
// it stores like an apiserver: create returns the event with a resource
// version, patch returns the stored event with the patch's count.
type scriptSink struct {
	mu       sync.Mutex
	calls    []call
	onCreate func(n int, e *v1.Event) (*v1.Event, error) // n counts create calls from 1
	onPatch  func(n int, e *v1.Event, p []byte) (*v1.Event, error)
	creates  int
	patches  int
}

func (s *scriptSink) Create(e *v1.Event) (*v1.Event, error) {
	s.mu.Lock()
	s.creates++
	n := s.creates
	s.calls = append(s.calls, call{verb: "create", event: e.DeepCopy()})
	f := s.onCreate
	s.mu.Unlock()
	if f != nil {
		return f(n, e)
	}
	out := e.DeepCopy()
	out.ResourceVersion = "1"
	return out, nil
}

func (s *scriptSink) Update(e *v1.Event) (*v1.Event, error) {
	s.mu.Lock()
	s.calls = append(s.calls, call{verb: "update", event: e.DeepCopy()})
	s.mu.Unlock()
	return e, nil
}

func (s *scriptSink) Patch(e *v1.Event, p []byte) (*v1.Event, error) {
	s.mu.Lock()
	s.patches++
	n := s.patches
	s.calls = append(s.calls, call{verb: "patch", event: e.DeepCopy(), patch: string(p)})
	f := s.onPatch
	s.mu.Unlock()
	if f != nil {
		return f(n, e, p)
	}
	out := e.DeepCopy()
	out.ResourceVersion = "2"
	return out, nil
}

func (s *scriptSink) snapshot() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]call(nil), s.calls...)
}

// logContext returns a context carrying a logger that writes to l, for
// WithContext.
func logContext(l *testkit.Lines) context.Context {
	return klog.NewContext(context.Background(), l.Logger())
}

// gate makes a sink call wait: each call of wait takes one token, or
// returns at once once the gate is open.
type gate struct {
	tokens chan struct{}
	open   chan struct{}
	once   sync.Once
}

func newGate() *gate { return &gate{tokens: make(chan struct{}), open: make(chan struct{})} }

func (g *gate) wait() {
	select {
	case <-g.tokens:
	case <-g.open:
	}
}

// let lets n waiting calls through, one at a time.
func (g *gate) let(n int) {
	for range n {
		g.tokens <- struct{}{}
	}
}

// release lets every call through from now on.
func (g *gate) release() { g.once.Do(func() { close(g.open) }) }
