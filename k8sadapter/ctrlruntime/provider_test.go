package ctrlruntime_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clientevents "k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/heraldgo/herald/k8sadapter/ctrlruntime"
)

// stored returns how many core/v1 and events.k8s.io/v1 events client
// holds in namespace "shop".
func stored(t *testing.T, client *fake.Clientset) (core, ev int) {
	t.Helper()
	cl, err := client.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	el, err := client.EventsV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(cl.Items), len(el.Items)
}

// newProvider returns a Provider for mgr writing to a fake clientset that
// allows every access review, with its metrics in a registry of its own.
func newProvider(t *testing.T, mgr manager.Manager, opts ...ctrlruntime.Option) (*ctrlruntime.Provider, *fake.Clientset) {
	t.Helper()
	client := newClient(func(*authorizationv1.ResourceAttributes) bool { return true })
	opts = append([]ctrlruntime.Option{ctrlruntime.WithClient(client), ctrlruntime.WithRegisterer(prometheus.NewRegistry())}, opts...)
	p, err := ctrlruntime.New(mgr, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p, client
}

// newClient returns a fake clientset whose access reviews allow what
// allowed accepts. (The fake's own answer allows nothing.)
func newClient(allowed func(*authorizationv1.ResourceAttributes) bool) *fake.Clientset {
	client := fake.NewClientset()
	client.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		r.Status.Allowed = allowed(r.Spec.ResourceAttributes)
		return true, r, nil
	})
	return client
}

// A manager stopped right after its controller recorded: every event of
// both APIs is written before mgr.Start returns, with no error logged.
// controller-runtime's own recorders drop what is still queued then.
//
// The flush writes most of the 200 events, one at a time, through the
// fake clientset, which takes milliseconds a write under the race
// detector (it builds a REST mapper for every create): seconds in all,
// more on a loaded machine. Its bound is a failsafe, not the default 10 s.
func TestManagerStopFlushesEveryEvent(t *testing.T) {
	var l logs
	mgr := newManager(t, &l)
	p, client := newProvider(t, mgr, ctrlruntime.WithShutdownTimeout(gracePeriod/2))
	coreRec, evRec := p.GetEventRecorderFor("my-controller"), p.GetEventRecorder("my-controller")

	const n = 100
	recorded := make(chan struct{})
	// A runnable like a controller (controller-runtime files it with them).
	err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		for i := range n {
			coreRec.Eventf(pod(i), v1.EventTypeNormal, "Synced", "synced %d", i)
			evRec.Eventf(pod(i), nil, v1.EventTypeNormal, "Synced", "Sync", "synced %d", i)
		}
		close(recorded)
		<-ctx.Done()
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, mgr)
	<-recorded
	stop()

	if core, ev := stored(t, client); core != n || ev != n {
		t.Errorf("stored %d core/v1 and %d events.k8s.io/v1 events, want %d each", core, ev, n)
	}
	s := p.Stats()
	if s.Core.Recorded != n || s.Core.Created != n || s.Events.Recorded != n || s.Events.Created != n {
		t.Errorf("Stats: core recorded %d created %d, events recorded %d created %d; want %d each",
			s.Core.Recorded, s.Core.Created, s.Events.Recorded, s.Events.Created, n)
	}
	if errs := l.matching(`"error"=`); len(errs) > 0 {
		t.Errorf("errors logged:\n%v", errs)
	}
}

// An event a controller records while the manager stops (after its
// context ended, before its Reconcile returns) is written: the manager
// stops the Provider after its controllers.
func TestEventRecordedWhileManagerStopsIsWritten(t *testing.T) {
	var l logs
	mgr := newManager(t, &l)
	p, client := newProvider(t, mgr)
	coreRec, evRec := p.GetEventRecorderFor("my-controller"), p.GetEventRecorder("my-controller")

	started := make(chan struct{})
	err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		coreRec.Event(pod(0), v1.EventTypeNormal, "Stopping", "last reconcile done")
		evRec.Eventf(pod(0), nil, v1.EventTypeNormal, "Stopping", "Stop", "last reconcile done")
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, mgr)
	<-started
	stop()

	if core, ev := stored(t, client); core != 1 || ev != 1 {
		t.Errorf("stored %d core/v1 and %d events.k8s.io/v1 events, want 1 each", core, ev)
	}
	if s := p.Stats(); s.Core.DroppedClosed != 0 || s.Events.DroppedClosed != 0 {
		t.Errorf("Stats: DroppedClosed core %d, events %d; want 0", s.Core.DroppedClosed, s.Events.DroppedClosed)
	}
}

// The recorders have the manager's types and are herald's (with a logger
// of one's own, as client-go's are).
func TestRecorderTypes(t *testing.T) {
	var l logs
	mgr := newManager(t, &l)
	p, _ := newProvider(t, mgr)
	t.Cleanup(func() { p.Shutdown(context.Background()) })

	var core record.EventRecorder = p.GetEventRecorderFor("a")
	if _, ok := core.(record.EventRecorderLogger); !ok {
		t.Errorf("GetEventRecorderFor returned %T, not a record.EventRecorderLogger", core)
	}
	var ev clientevents.EventRecorder = p.GetEventRecorder("a")
	if _, ok := ev.(clientevents.EventRecorderLogger); !ok {
		t.Errorf("GetEventRecorder returned %T, not an events.EventRecorderLogger", ev)
	}
}

// The events, and the broadcasters' errors, are logged by the manager's
// logger under the name "events".
func TestLogsGoToTheManagersLogger(t *testing.T) {
	var l logs
	mgr := newManager(t, &l)
	p, _ := newProvider(t, mgr)
	stop := run(t, mgr)

	p.GetEventRecorderFor("a").Event(pod(1), v1.EventTypeWarning, "BackOff", "back-off")
	p.GetEventRecorder("a").Eventf(pod(2), nil, v1.EventTypeWarning, "BackOff", "Restart", "back-off")
	p.GetEventRecorderFor("a").Event(pod(3), "Bogus", "BackOff", "back-off")
	stop()

	for _, want := range [][]string{
		{"events", "Event occurred", `"object"={"name"="web-1" "namespace"="shop"}`, `"reason"="BackOff"`},
		{"events", "Event occurred", `"object"={"name"="web-2" "namespace"="shop"}`, `"action"="Restart"`},
		{"events", `"error"=null`, "Unsupported event type", `"eventType"="Bogus"`},
	} {
		if got := l.matching(want...); len(got) != 1 {
			t.Errorf("lines with %q: %d, want 1; the log:\n%v", want, len(got), l.matching())
		}
	}
}

// A Provider whose manager never starts is flushed by Shutdown; events
// recorded afterwards are refused and counted.
func TestShutdownWithoutManager(t *testing.T) {
	var l logs
	mgr := newManager(t, &l)
	p, client := newProvider(t, mgr)

	p.GetEventRecorderFor("a").Event(pod(1), v1.EventTypeNormal, "Created", "created")
	p.GetEventRecorder("a").Eventf(pod(1), nil, v1.EventTypeNormal, "Created", "Create", "created")
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if core, ev := stored(t, client); core != 1 || ev != 1 {
		t.Errorf("stored %d core/v1 and %d events.k8s.io/v1 events, want 1 each", core, ev)
	}

	p.GetEventRecorderFor("a").Event(pod(2), v1.EventTypeNormal, "Created", "created")
	p.GetEventRecorder("a").Eventf(pod(2), nil, v1.EventTypeNormal, "Created", "Create", "created")
	if s := p.Stats(); s.Core.DroppedClosed != 1 || s.Events.DroppedClosed != 1 {
		t.Errorf("after Shutdown: DroppedClosed core %d, events %d; want 1 each", s.Core.DroppedClosed, s.Events.DroppedClosed)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

// TestShutdownTimeoutLogsWhatItAbandoned: the apiserver hangs on a
// core/v1 create while the manager stops. The flush is cut short by the
// shutdown timeout, and the line the Provider logs then gives the number
// of events it abandoned: the nine waiting behind the hung call.
//
// The permission check is off: the fake clientset runs its reactors under
// one lock, so the hung create holds up every other call through it, and
// a check whose reviews came after the hang would keep the runnable from
// the flush until the manager's grace period ran out.
func TestShutdownTimeoutLogsWhatItAbandoned(t *testing.T) {
	var l logs
	mgr := newManager(t, &l)
	client := newClient(func(*authorizationv1.ResourceAttributes) bool { return true })
	hang, hanging := make(chan struct{}), make(chan struct{}, 1)
	client.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetResource().Group == "" {
			select {
			case hanging <- struct{}{}:
				<-hang // the first core/v1 create hangs
			default:
			}
		}
		return false, nil, nil
	})
	p, err := ctrlruntime.New(mgr, ctrlruntime.WithClient(client), ctrlruntime.WithRegisterer(prometheus.NewRegistry()),
		ctrlruntime.WithShutdownTimeout(100*time.Millisecond), ctrlruntime.WithPermissionCheck(ctrlruntime.PermissionCheck{Disabled: true}))
	if err != nil {
		t.Fatal(err)
	}
	rec := p.GetEventRecorderFor("c")
	const n = 10
	recorded := make(chan struct{})
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		for i := range n {
			rec.Event(pod(i), v1.EventTypeNormal, "Synced", "synced")
		}
		close(recorded)
		<-ctx.Done()
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	stop := run(t, mgr)
	<-recorded
	<-hanging
	stop()
	lines := l.matching("Not every event was written")
	close(hang)
	if len(lines) != 1 || !strings.Contains(lines[0], `"abandoned"=9`) {
		t.Errorf("log %q, want one line giving the 9 events abandoned", lines)
	}
	eventually(t, "the hung call's event to be written", func() bool { return p.Stats().Core.Created == 1 })
	if s := p.Stats().Core; s.Abandoned != n-1 {
		t.Errorf("Stats().Core.Abandoned = %d, want %d", s.Abandoned, n-1)
	}
}
