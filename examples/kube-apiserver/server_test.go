package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/k8sadapter"
)

// The tests below take paths only a real apiserver shows: its answers to
// a patch of a deleted event, to an event in a terminating namespace, to
// an invalid event, its absence during a restart, its speed.

// TestRepeatOfDeletedEventIsCreated: the event was deleted on the server
// (its TTL ran out, or someone deleted it) between two occurrences. The
// patch of the repeat gets 404, and the event is created again, with the
// same name and the count it has reached.
func TestRepeatOfDeletedEventIsCreated(t *testing.T) {
	const ns = "deleted"
	createNamespace(t, ns)
	sink := &recordingSink{sink: sinkTo()}
	e, h, r := startHerald(t, sink)
	p := pod(ns, "web-0")

	r.Event(p, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
	eventually(t, "the first event", func() bool { return settled(e, h) })
	first := stored(t, ns)
	if len(first) != 1 {
		t.Fatalf("stored %d events, want 1", len(first))
	}
	if err := server.Client.CoreV1().Events(ns).Delete(t.Context(), first[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Event(p, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
	eventually(t, "the repeat", func() bool { return settled(e, h) })

	if got := stored(t, ns); len(got) != 1 || got[0].Name != first[0].Name || got[0].Count != 2 {
		t.Errorf("stored %v, want one event %s with count 2", summarize(got), first[0].Name)
	}
	if got, want := fmt.Sprint(sink.Calls()), "[create: ok patch: NotFound create: ok]"; got != want {
		t.Errorf("sink calls = %s, want %s", got, want)
	}
	if s := h.Stats(); s.Created != 2 || s.Patched != 0 || s.Deduplicated != 1 || s.Retries != 0 {
		t.Errorf("Stats() = %+v, want Created 2, Patched 0, Deduplicated 1, Retries 0", s)
	}
}

// TestNamespaceTerminatingIsFinal: an event for a namespace being deleted
// is refused with the NamespaceTerminating cause. client-go gives up at
// once, without retrying; so does herald.
func TestNamespaceTerminatingIsFinal(t *testing.T) {
	const ns = "terminating"
	createNamespace(t, ns)
	// No namespace controller runs, so the namespace stays Terminating.
	if err := server.Client.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := server.Client.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil || got.Status.Phase != v1.NamespaceTerminating {
		t.Fatalf("namespace %s: %v, %v; want it Terminating", ns, got.Status.Phase, err)
	}
	sink := &recordingSink{sink: sinkTo()}
	// A pause of 1 ms: a retry, were there one, would come at once.
	e, h, r := startHerald(t, sink, k8sadapter.WithSleepDuration(time.Millisecond))

	r.Event(pod(ns, "web-0"), v1.EventTypeNormal, "Started", "Started container app")
	eventually(t, "the event's fate", func() bool { return settled(e, h) })

	calls := sink.Calls()
	if len(calls) != 1 || !apierrors.HasStatusCause(calls[0].err, v1.NamespaceTerminatingCause) {
		t.Errorf("sink calls = %v, want one create refused with cause %s", calls, v1.NamespaceTerminatingCause)
	}
	if s := h.Stats(); s.FailedRejected != 1 || s.Retries != 0 || s.Created != 0 {
		t.Errorf("Stats() = %+v, want FailedRejected 1, Retries 0, Created 0", s)
	}
}

// TestServerRejectsInvalidEvent: events the apiserver refuses (its
// validation, its request size limit) are given up on at once, counted as
// rejected; the next event is written as usual.
func TestServerRejectsInvalidEvent(t *testing.T) {
	const ns = "invalid"
	createNamespace(t, ns)
	tests := []struct {
		name   string
		record func(r record.EventRecorder, p *v1.Pod)
		want   metav1.StatusReason
	}{
		{
			name: "annotation key",
			record: func(r record.EventRecorder, p *v1.Pod) {
				r.AnnotatedEventf(p, map[string]string{"not a valid key!": "x"}, v1.EventTypeNormal, "Started", "Started container app")
			},
			want: metav1.StatusReasonInvalid,
		},
		{
			name: "message over the request size limit",
			record: func(r record.EventRecorder, p *v1.Pod) {
				r.Event(p, v1.EventTypeWarning, "Failed", strings.Repeat("x", 4<<20))
			},
			want: metav1.StatusReasonRequestEntityTooLarge,
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sink := &recordingSink{sink: sinkTo()}
			e, h, r := startHerald(t, sink, k8sadapter.WithSleepDuration(time.Millisecond))
			p := pod(ns, fmt.Sprint("web-", i))
			tc.record(r, p)
			r.Event(p, v1.EventTypeNormal, "Pulled", "Container image already present on machine")
			eventually(t, "both events' fates", func() bool { return settled(e, h) })

			calls := sink.Calls()
			if len(calls) != 2 || apierrors.ReasonForError(calls[0].err) != tc.want || calls[1].err != nil {
				t.Errorf("sink calls = %v, want [create: %s create: ok]", calls, tc.want)
			}
			if s := h.Stats(); s.FailedRejected != 1 || s.Created != 1 || s.Retries != 0 {
				t.Errorf("Stats() = %+v, want FailedRejected 1, Created 1, Retries 0", s)
			}
		})
	}
}

// TestAPIServerRestart stops the apiserver while herald is writing events
// and starts it again (on the same etcd). The events recorded meanwhile are
// retried until it is back; none is stored twice; the counters add up.
func TestAPIServerRestart(t *testing.T) {
	if !server.Restartable() {
		t.Skip("the apiserver is external (herald_external_apiserver): restarted only where this process runs it")
	}
	const ns, n, repeats = "restart", 200, 50
	createNamespace(t, ns)
	sink := &recordingSink{sink: sinkTo()}
	// A pause of 50 ms between attempts, for up to a minute: the restart
	// takes a few seconds.
	e, h, r := startHerald(t, sink, k8sadapter.WithSleepDuration(50*time.Millisecond), k8sadapter.WithMaxTries(1200))
	web := func(i int) *v1.Pod { return pod(ns, fmt.Sprint("web-", i)) }

	for i := range n {
		r.Eventf(web(i), v1.EventTypeNormal, "Scheduled", "Successfully assigned %s/web-%d to node-1", ns, i)
	}
	// Stop mid-stream: a request may be cut after the apiserver stored
	// the event, before the answer arrived.
	eventually(t, "20 events created", func() bool { return h.Stats().Created >= 20 })
	server.StopAPIServer()
	restarted := false
	t.Cleanup(func() { // for the other tests
		if !restarted {
			server.StartAPIServer()
		}
	})
	for i := range repeats {
		r.Eventf(web(i), v1.EventTypeNormal, "Scheduled", "Successfully assigned %s/web-%d to node-1", ns, i)
	}
	eventually(t, "a failed attempt retried", func() bool { return h.Stats().Retries > 0 })
	if err := server.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	eventually(t, "every event's fate", func() bool { return settled(e, h) })

	// One event per object, none twice, with its count.
	got := stored(t, ns)
	if len(got) != n {
		t.Errorf("stored %d events, want %d", len(got), n)
	}
	counts := map[string]int32{}
	for _, ev := range got {
		counts[ev.InvolvedObject.Name] += ev.Count
	}
	for i := range n {
		want := int32(1)
		if i < repeats {
			want = 2
		}
		if c := counts[web(i).Name]; c != want {
			t.Errorf("web-%d: stored count %d, want %d", i, c, want)
		}
	}

	// The counters add up, to what the sink saw. A create that the
	// apiserver stored but whose answer was cut is retried and refused
	// as AlreadyExists (final, as in client-go): the event is stored,
	// once, and counted as rejected.
	s := h.Stats()
	if s.Created+s.Patched+s.FailedRejected != n+repeats || s.FailedRetries != 0 || s.FailedShutdown != 0 {
		t.Errorf("Stats() = %+v, want Created+Patched+FailedRejected = %d and no other failure", s, n+repeats)
	}
	var alreadyExists, notFound uint64
	calls := sink.Calls()
	for _, c := range calls {
		switch {
		case c.verb == "create" && apierrors.IsAlreadyExists(c.err):
			alreadyExists++
		case c.verb == "patch" && apierrors.IsNotFound(c.err):
			notFound++ // then a create, in the same attempt
		case c.err != nil && apierrors.ReasonForError(c.err) != metav1.StatusReasonUnknown:
			t.Errorf("sink call %v: an answer the restart does not explain", c)
		}
	}
	if alreadyExists != s.FailedRejected {
		t.Errorf("%d creates refused as AlreadyExists, Stats().FailedRejected = %d", alreadyExists, s.FailedRejected)
	}
	if attempts := s.Created + s.Patched + s.FailedRejected + s.Retries + notFound; uint64(len(calls)) != attempts {
		t.Errorf("sink saw %d calls, Stats() accounts for %d: %+v", len(calls), attempts, s)
	}
	t.Logf("while the apiserver was down: %d retries; created %d, patched %d, already there %d", s.Retries, s.Created, s.Patched, s.FailedRejected)
}

// TestShutdownFlushesPendingEvents records 500 events about distinct
// objects and shuts the broadcaster down at once, while most are still
// pending (the apiserver takes a few milliseconds per create). herald
// writes them all before Shutdown returns; client-go drops what is queued.
func TestShutdownFlushesPendingEvents(t *testing.T) {
	const n = 500
	record500 := func(r record.EventRecorder, ns string) {
		for i := range n {
			r.Eventf(pod(ns, fmt.Sprint("web-", i)), v1.EventTypeNormal, "Scheduled", "Successfully assigned %s/web-%d to node-1", ns, i)
		}
	}

	t.Run("herald", func(t *testing.T) {
		const ns = "flush-herald"
		createNamespace(t, ns)
		e, h, r := startHerald(t, sinkTo(), k8sadapter.WithShutdownTimeout(time.Minute))
		record500(r, ns)
		pending := n - h.Stats().Created
		e.Shutdown()
		if pending == 0 {
			t.Fatal("all events were written before Shutdown: nothing was pending")
		}
		if got := len(stored(t, ns)); got != n {
			t.Errorf("stored %d events after Shutdown, want %d", got, n)
		}
		if s := h.Stats(); s.Created != n || s.Abandoned != 0 {
			t.Errorf("Stats() = %+v, want Created %d, Abandoned 0", s, n)
		}
		t.Logf("%d of %d events were pending when Shutdown was called", pending, n)
	})

	t.Run("client-go", func(t *testing.T) {
		const ns = "flush-clientgo"
		createNamespace(t, ns)
		// Its logs are discarded: its sink goroutine outlives Shutdown.
		b := record.NewBroadcaster(record.WithContext(klog.NewContext(t.Context(), logr.Discard())))
		b.StartRecordingToSink(sinkTo())
		record500(b.NewRecorder(scheme.Scheme, source), ns)
		b.Shutdown()
		got := len(stored(t, ns))
		if got >= n {
			t.Errorf("client-go stored %d of %d events: expected it to drop what was queued at Shutdown", got, n)
		}
		t.Logf("client-go stored %d of %d events", got, n)
	})
}
