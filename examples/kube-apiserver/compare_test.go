package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	testclock "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/k8sadapter"
)

// combinedPrefix starts the message of an event that stands for a group of
// similar ones, in client-go and in herald.
const combinedPrefix = "(combined from similar events): "

// storedEvent is what both recorders determine about an event the
// apiserver stored. Left out, because they differ by construction: the
// name (it embeds the recorder's clock), namespace, UID and resource
// versions; and the timestamps of events that are not combined, which
// client-go's recorder takes from the real clock (it has no clock to
// inject).
type storedEvent struct {
	Object                                 string // kind/name
	Type, Reason, Message                  string
	Count                                  int32
	Source                                 v1.EventSource
	ReportingController, ReportingInstance string
	// First and Last are the timestamps of a combined event, which
	// client-go's correlator takes from its clock, the fake one here;
	// zero for other events.
	First, Last time.Time
}

func summarize(events []v1.Event) []storedEvent {
	var out []storedEvent
	for _, e := range events {
		s := storedEvent{
			Object: e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name,
			Type:   e.Type, Reason: e.Reason, Message: e.Message, Count: e.Count, Source: e.Source,
			ReportingController: e.ReportingController, ReportingInstance: e.ReportingInstance,
		}
		if strings.HasPrefix(e.Message, combinedPrefix) {
			s.First, s.Last = e.FirstTimestamp.UTC(), e.LastTimestamp.UTC()
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b storedEvent) int {
		return strings.Compare(a.Object+"\x00"+a.Reason+"\x00"+a.Message, b.Object+"\x00"+b.Reason+"\x00"+b.Message)
	})
	return out
}

// TestSameEventsAsClientGo runs the demo's controller twice against the
// same apiserver, recording through client-go's record.NewBroadcaster()
// (namespace clientgo) and through herald's k8sadapter.NewBroadcaster()
// (namespace herald), on one fake clock, and compares what the apiserver
// stored: the same events, counts, messages and, where both take them from
// the fake clock, timestamps.
func TestSameEventsAsClientGo(t *testing.T) {
	ctx := t.Context()
	realStart := time.Now()
	// An hour ago, so that fake and real timestamps cannot be confused; a
	// whole second, as stored timestamps have second precision.
	fakeStart := realStart.Add(-time.Hour).Truncate(time.Second)
	clk := testclock.NewFakeClock(fakeStart)
	corr := record.CorrelatorOptions{Clock: clk} // both correlators read the fake clock

	// client-go's logs are discarded: its sink goroutine may outlive the
	// test, as its Shutdown does not wait for it.
	anchor := record.NewBroadcaster(record.WithContext(klog.NewContext(ctx, logr.Discard())), record.WithCorrelatorOptions(corr))
	t.Cleanup(anchor.Shutdown)
	anchor.StartRecordingToSink(sinkTo())
	_, _, heraldRecorder := startHerald(t, sinkTo(), k8sadapter.WithClock(clk), k8sadapter.WithCorrelatorOptions(corr))

	recorders := []struct {
		ns string
		r  record.EventRecorder
	}{
		{"clientgo", anchor.NewRecorder(scheme.Scheme, source)},
		{"herald", heraldRecorder},
	}
	controllers := make([]controller, len(recorders))
	for i, rec := range recorders {
		pods, err := createPods(ctx, server.Client, rec.ns)
		if err != nil {
			t.Fatal(err)
		}
		// The clock moves between events, as a real one does: event
		// names embed the recorder's clock, and herald's recorder reads
		// the fake one.
		controllers[i] = controller{recorder: rec.r, pods: pods, tick: func() { clk.Step(time.Millisecond) }}
	}

	// Three phases, ten fake seconds apart. In each, both controllers
	// record, then a checkpoint event; once both checkpoints are stored
	// (each sink writes in order), the clock moves to the next phase. So
	// a phase's events, wherever their correlator reads the clock, are
	// stamped within the phase's first fake second.
	for i, ph := range phases {
		clk.SetTime(fakeStart.Add(time.Duration(i) * 10 * time.Second))
		for j, rec := range recorders {
			ph.run(controllers[j])
			rec.r.Eventf(pod(rec.ns, "checkpoint"), v1.EventTypeNormal, "Checkpoint", "%s done", ph.name)
		}
		eventually(t, ph.name+" stored", func() bool {
			return hasCheckpoint(t, "clientgo", ph.name) && hasCheckpoint(t, "herald", ph.name)
		})
	}

	byClientGo, byHerald := stored(t, "clientgo"), stored(t, "herald")
	want, got := summarize(byClientGo), summarize(byHerald)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stored events differ (-client-go +herald):\n%s", diff)
	}

	// The comparison is not vacuous: repeats, combined events and the
	// spam filter all left their mark.
	// 1 crash-loop event, 9 pull events and 1 combined, 1 probe event, 3 checkpoints.
	if len(got) != 15 {
		t.Errorf("herald stored %d events, want 15:\n%v", len(got), got)
	}
	for _, w := range []struct {
		object, reason string
		count          int32
		combined       bool
	}{
		{"Pod/checkout-7d9f", "BackOff", 8, false},
		{"Pod/search-5c2b", "Pulling", 3, true},
		{"Pod/cart-0", "Unhealthy", 25, false},
	} {
		if !slices.ContainsFunc(got, func(s storedEvent) bool {
			return s.Object == w.object && s.Reason == w.reason && s.Count == w.count && strings.HasPrefix(s.Message, combinedPrefix) == w.combined
		}) {
			t.Errorf("no %s %s event with count %d (combined: %v) stored", w.object, w.reason, w.count, w.combined)
		}
	}

	// Timestamps only one side determines: herald stamps every event with
	// the fake clock (within its phase's second), client-go's recorder
	// stamps with the real one.
	for _, e := range byHerald {
		at := fakeStart.Add(time.Duration(phaseOf(e)) * 10 * time.Second)
		if !e.FirstTimestamp.Time.Equal(at) || !e.LastTimestamp.Time.Equal(at) {
			t.Errorf("herald: %s %q stamped %v to %v, want the fake clock's %v", e.InvolvedObject.Name, e.Message, e.FirstTimestamp, e.LastTimestamp, at)
		}
	}
	for _, e := range byClientGo {
		if !strings.HasPrefix(e.Message, combinedPrefix) && e.FirstTimestamp.Time.Before(realStart.Truncate(time.Second)) {
			t.Errorf("client-go: %s %q stamped %v, want the real clock (after %v)", e.InvolvedObject.Name, e.Message, e.FirstTimestamp, realStart)
		}
	}
}

// phase is one part of the controller's work.
type phase struct {
	name   string
	run    func(controller)
	object string // the pod it records events about
}

var phases = []phase{
	{"crash loop", controller.crashLoop, "checkout-7d9f"},
	{"image pull", controller.pullImage, "search-5c2b"},
	{"probe flood", controller.flood, "cart-0"},
}

// phaseOf returns the index of the phase that recorded e.
func phaseOf(e v1.Event) int {
	return slices.IndexFunc(phases, func(p phase) bool {
		return e.InvolvedObject.Name == p.object || e.Reason == "Checkpoint" && e.Message == p.name+" done"
	})
}

// hasCheckpoint reports whether the checkpoint event of the named phase is
// stored in namespace ns.
func hasCheckpoint(t *testing.T, ns, phase string) bool {
	return slices.ContainsFunc(stored(t, ns), func(e v1.Event) bool {
		return e.Reason == "Checkpoint" && e.Message == phase+" done"
	})
}
