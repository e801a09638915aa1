package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientevents "k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/heraldgo/herald/k8sadapter/ctrlruntime"
)

// The tests below run a real controller-runtime manager with a real
// controller (a reconciler of ConfigMaps) against the shared apiserver,
// recording through herald's ctrlruntime.Provider, or through the
// manager's own recorders (client-go's broadcasters) for comparison.

// noticer is a reconciler as controllers are written: it reads the
// ConfigMap it is asked about and records, on both event APIs, one event
// three times ("Seen": a repeat) and one event once ("Synced").
type noticer struct {
	client client.Client
	core   record.EventRecorder
	events clientevents.EventRecorder
	done   chan<- string // receives each reconciled ConfigMap's name
}

func (r *noticer) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var cm v1.ConfigMap
	if err := r.client.Get(ctx, req.NamespacedName, &cm); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	for range 3 {
		r.core.Eventf(&cm, v1.EventTypeNormal, "Seen", "Seen %d keys", len(cm.Data))
		r.events.Eventf(&cm, nil, v1.EventTypeNormal, "Seen", "Reconcile", "Seen %d keys", len(cm.Data))
	}
	r.core.Event(&cm, v1.EventTypeNormal, "Synced", "Synced")
	r.events.Eventf(&cm, nil, v1.EventTypeNormal, "Synced", "Reconcile", "Synced")
	r.done <- req.Name
	return reconcile.Result{}, nil
}

// managerLogs collects a manager's log lines.
type managerLogs struct {
	mu    sync.Mutex
	lines []string
}

// logger logs to l at verbosity 1 (the events' lines, and the permission
// check's); errors are the lines with an "error" key, or "Unable".
func (l *managerLogs) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 1})
}

func (l *managerLogs) errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, `"error"=`) || strings.Contains(line, "Unable") {
			out = append(out, line)
		}
	}
	return out
}

// matching returns the lines that contain every one of parts.
func (l *managerLogs) matching(parts ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
			out = append(out, line)
		}
	}
	return out
}

// crRun is one manager running the noticer in a namespace of its own.
type crRun struct {
	ns       string
	mgr      manager.Manager
	provider *ctrlruntime.Provider // nil: the manager's own recorders
	logs     *managerLogs
	done     chan string
	stop     func() // stops the manager and waits for mgr.Start to return
}

// namespaces numbers the namespaces startManager creates, so that a test
// can run more than once against one apiserver (go test -count).
var namespaces atomic.Int64

// startManager creates a namespace named after ns and n ConfigMaps in it, and starts a
// manager whose cache and controller watch ns, with herald's recorders if
// withHerald, else the manager's own. The manager is stopped when t ends
// if the test did not stop it.
func startManager(t *testing.T, ns string, n int, withHerald bool) *crRun {
	t.Helper()
	ns = fmt.Sprintf("%s-%d", ns, namespaces.Add(1))
	createNamespace(t, ns)
	for i := range n {
		cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i), Namespace: ns},
			Data: map[string]string{"a": "1", "b": "2"}}
		if _, err := server.Client.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r := &crRun{ns: ns, logs: &managerLogs{}, done: make(chan string, n)}
	mgr, err := manager.New(server.Config, manager.Options{
		Logger:  r.logs.logger(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.mgr = mgr
	rec := &noticer{client: mgr.GetClient(), done: r.done}
	if withHerald {
		if r.provider, err = ctrlruntime.New(mgr); err != nil {
			t.Fatal(err)
		}
		rec.core, rec.events = r.provider.GetEventRecorderFor("noticer"), r.provider.GetEventRecorder("noticer")
	} else {
		//lint:ignore SA1019 the manager's own core/v1 recorder is what herald's is compared with
		rec.core, rec.events = mgr.GetEventRecorderFor("noticer"), mgr.GetEventRecorder("noticer")
	}
	if err := builder.ControllerManagedBy(mgr).For(&v1.ConfigMap{}).Named("noticer-" + ns).Complete(rec); err != nil {
		t.Fatal(err)
	}

	r.stop = runManager(t, mgr)
	return r
}

// runManager starts mgr and returns a function that stops it and waits
// until mgr.Start has returned, failing t if it returned an error. The
// manager is stopped when t ends if the test did not stop it.
func runManager(t *testing.T, mgr manager.Manager) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-errc; err != nil {
				t.Errorf("mgr.Start: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitReconciled waits until every one of the n ConfigMaps has been
// reconciled once.
func (r *crRun) waitReconciled(t *testing.T, n int) {
	t.Helper()
	seen := map[string]bool{}
	for len(seen) < n {
		select {
		case name := <-r.done:
			seen[name] = true
		case <-t.Context().Done():
			t.Fatalf("reconciled %d of %d ConfigMaps", len(seen), n)
		}
	}
}

// The two event APIs are two views of one resource: each lists the
// events of both. An event a core/v1 recorder made has a source; one an
// events.k8s.io/v1 recorder made has none.

// storedOld returns the events that core/v1 recorders stored in
// namespace ns.
func storedOld(t *testing.T, ns string) []v1.Event {
	t.Helper()
	return slices.DeleteFunc(stored(t, ns), func(e v1.Event) bool { return e.Source.Component == "" })
}

// storedNew returns the events that events.k8s.io/v1 recorders stored in
// namespace ns.
func storedNew(t *testing.T, ns string) []eventsv1.Event {
	t.Helper()
	list, err := server.Client.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list events.k8s.io events in %s: %v", ns, err)
	}
	return slices.DeleteFunc(list.Items, func(e eventsv1.Event) bool { return e.DeprecatedSource.Component != "" })
}

// newEvent is what both recorders determine about a stored
// events.k8s.io/v1 event (names and times embed the clock).
type newEvent struct {
	Regarding, Type, Reason, Action, Note  string
	ReportingController, ReportingInstance string
	Series                                 int32 // 0: no series
}

func summarizeNew(events []eventsv1.Event) []newEvent {
	var out []newEvent
	for _, e := range events {
		s := newEvent{
			Regarding: e.Regarding.Kind + "/" + e.Regarding.Name, Type: e.Type, Reason: e.Reason, Action: e.Action,
			Note: e.Note, ReportingController: e.ReportingController, ReportingInstance: e.ReportingInstance,
		}
		if e.Series != nil {
			s.Series = e.Series.Count
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b newEvent) int {
		return strings.Compare(a.Regarding+"\x00"+a.Reason, b.Regarding+"\x00"+b.Reason)
	})
	return out
}

// crSettled reports whether namespace ns holds the noticer's events for n
// ConfigMaps as they are written while the manager runs: per ConfigMap,
// core/v1 "Seen" with count 3 and "Synced"; events.k8s.io/v1 "Seen" with a
// series whose count series accepts, and "Synced".
func crSettled(t *testing.T, ns string, n int, series func(int32) bool) bool {
	core, ev := storedOld(t, ns), storedNew(t, ns)
	if len(core) != 2*n || len(ev) != 2*n {
		return false
	}
	for _, e := range core {
		if e.Reason == "Seen" && e.Count != 3 {
			return false
		}
	}
	for _, e := range ev {
		if e.Reason == "Seen" && (e.Series == nil || !series(e.Series.Count)) {
			return false
		}
	}
	return true
}

// withoutSeries returns events with their series counts cleared.
func withoutSeries(events []newEvent) []newEvent {
	for i := range events {
		events[i].Series = 0
	}
	return events
}

// TestControllerRuntimeSameEventsAsClientGo runs the same controller in
// two managers, one recording through the manager's own recorders
// (client-go's broadcasters), one through herald's Provider, and compares
// what the apiserver stored for each event API: the same events, counts,
// sources and reporting fields.
//
// Series counts differ as the events package documents. While it runs,
// client-go stores a series of 2 for the three "Seen" events (it writes
// the third only at its next periodic pass, minutes later); herald stores
// 2, or 3 when the three were folded before its writer took the first
// (which depends on timing). Once its manager has stopped, herald has
// written every series' final count: 3.
func TestControllerRuntimeSameEventsAsClientGo(t *testing.T) {
	const n = 5
	runs := []*crRun{
		startManager(t, "cr-clientgo", n, false),
		startManager(t, "cr-herald", n, true),
	}
	clientGoSeries := func(c int32) bool { return c == 2 }
	heraldSeries := func(c int32) bool { return c == 2 || c == 3 }
	for i, r := range runs {
		r.waitReconciled(t, n)
		series := []func(int32) bool{clientGoSeries, heraldSeries}[i]
		eventually(t, r.ns+" events stored", func() bool { return crSettled(t, r.ns, n, series) })
	}
	if diff := cmp.Diff(summarize(storedOld(t, runs[0].ns)), summarize(storedOld(t, runs[1].ns))); diff != "" {
		t.Errorf("stored core/v1 events differ (-client-go +herald):\n%s", diff)
	}

	herald := runs[1]
	herald.stop()
	if diff := cmp.Diff(withoutSeries(summarizeNew(storedNew(t, runs[0].ns))), withoutSeries(summarizeNew(storedNew(t, herald.ns)))); diff != "" {
		t.Errorf("stored events.k8s.io/v1 events differ (-client-go +herald):\n%s", diff)
	}
	for _, e := range storedNew(t, herald.ns) {
		if e.Reason == "Seen" && (e.Series == nil || e.Series.Count != 3) {
			t.Errorf("after the manager stopped, %s %s has series %v, want a count of 3", e.Regarding.Name, e.Reason, e.Series)
		}
	}
	for _, r := range runs {
		r.stop()
		if errs := r.logs.errors(); len(errs) > 0 {
			t.Errorf("%s: errors logged:\n%s", r.ns, strings.Join(errs, "\n"))
		}
	}
}

// TestControllerRuntimeStopRightAfterRecording stops the manager as soon
// as its controller has recorded 80 events on each API (20 ConfigMaps, 40
// distinct events, the rest their repeats), once with the manager's own
// recorders and once with herald's Provider, and logs what each had
// stored when mgr.Start returned, and the error lines logged.
//
// With herald, every event of both APIs is stored, with its final count,
// nothing was dropped, nothing was logged as an error, and herald's
// metrics were in controller-runtime's registry while the manager ran;
// goleak (TestMain) checks that no goroutine is left. The manager's own
// recorders drop what is still queued when they stop: how much varies
// from run to run, so the test asserts only what client-go guarantees (no
// more than the 40, and no events.k8s.io/v1 series with its final count,
// which client-go writes minutes later at the earliest).
func TestControllerRuntimeStopRightAfterRecording(t *testing.T) {
	const n = 20
	t.Run("controller-runtime", func(t *testing.T) {
		r := startManager(t, "cr-stop-clientgo", n, false)
		r.waitReconciled(t, n)
		r.stop()
		f := r.figures(t, n)
		if f.core > 2*n || f.events > 2*n || f.eventsFinal != 0 {
			t.Errorf("stored %+v: more than the %d events, or an events.k8s.io/v1 series with its final count 3", f, 2*n)
		}
	})
	t.Run("herald", func(t *testing.T) {
		r := startManager(t, "cr-stop-herald", n, true)
		r.waitReconciled(t, n)
		got := metricValues(t, "herald_events_recorded_total")
		r.stop()
		want := map[string]float64{`api="core/v1"`: 4 * n, `api="events.k8s.io/v1"`: 4 * n}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("herald_events_recorded_total in controller-runtime's registry (-want +got):\n%s", diff)
		}
		if f, want := r.figures(t, n), (stopFigures{2 * n, n, 2 * n, n, 0}); f != want {
			t.Errorf("stored %+v, want %+v: every event, with its final count, and no error logged", f, want)
		}
		r.checkHeraldStats(t, n)
	})
}

// stopFigures is what a manager running the noticer had stored when
// mgr.Start returned: events of each API (of 2 per ConfigMap), the
// repeated ones ("Seen", 1 per ConfigMap) among them with their final
// count (core/v1 count 3, events.k8s.io/v1 series count 3), and the error
// lines logged.
type stopFigures struct {
	core, coreFinal, events, eventsFinal, errors int
}

// figures counts and logs what the noticer's n ConfigMaps stored in r's
// namespace, and r's error lines, once the stored events are listed. (The
// manager's own events.k8s.io/v1 recorder writes each event on a goroutine
// of its own, which logs an error when the manager's stop cuts its write
// short, also after mgr.Start returned.)
func (r *crRun) figures(t *testing.T, n int) stopFigures {
	t.Helper()
	core, ev := storedOld(t, r.ns), storedNew(t, r.ns)
	f := stopFigures{core: len(core), events: len(ev), errors: len(r.logs.errors())}
	for _, e := range core {
		if e.Reason == "Seen" && e.Count == 3 {
			f.coreFinal++
		}
	}
	for _, e := range ev {
		if e.Reason == "Seen" && e.Series != nil && e.Series.Count == 3 {
			f.eventsFinal++
		}
	}
	t.Logf("stored %d of %d core/v1 events (repeated ones with their final count: %d of %d), "+
		"%d of %d events.k8s.io/v1 events (%d of %d); %d error lines logged",
		f.core, 2*n, f.coreFinal, n, f.events, 2*n, f.eventsFinal, n, f.errors)
	return f
}

// checkHeraldStats checks the Provider's Stats after the noticer's n
// ConfigMaps: 4 events an API each, 2 created, the repeats patched (or,
// on events.k8s.io/v1, counted in their series).
func (r *crRun) checkHeraldStats(t *testing.T, n int) {
	t.Helper()
	s := r.provider.Stats()
	if s.Core.Recorded != uint64(4*n) || s.Core.Created != uint64(2*n) || s.Core.Patched != uint64(2*n) {
		t.Errorf("core/v1 Stats = %+v, want recorded %d, created %d, patched %d", s.Core, 4*n, 2*n, 2*n)
	}
	if s.Events.Recorded != uint64(4*n) || s.Events.Created != uint64(2*n) || s.Events.Patched != uint64(n) || s.Events.SeriesObserved != uint64(n) {
		t.Errorf("events.k8s.io/v1 Stats = %+v, want recorded %d, created %d, patched %d, series observed %d", s.Events, 4*n, 2*n, n, n)
	}
}

// metricValues returns the values of the named counter in
// controller-runtime's registry, by its labels.
func metricValues(t *testing.T, name string) map[string]float64 {
	t.Helper()
	return metricValuesIn(t, metrics.Registry, name)
}

// metricValuesIn returns the values of the named counter or gauge in g,
// by its labels.
func metricValuesIn(t *testing.T, g prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			v := m.GetCounter().GetValue()
			if g := m.GetGauge(); g != nil {
				v = g.GetValue()
			}
			out[strings.Join(labels, ",")] = v
		}
	}
	return out
}
