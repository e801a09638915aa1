package ctrlruntime_test

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestDropsLoggedToManagerLogger: the broadcasters' own errors (here,
// events refused after Shutdown) go to the manager's logger for both
// event APIs, not to klog's global logger.
func TestDropsLoggedToManagerLogger(t *testing.T) {
	var l logs
	mgr := newManager(t, &l)
	p, _ := newProvider(t, mgr)
	coreRec, evRec := p.GetEventRecorderFor("my-controller"), p.GetEventRecorder("my-controller")
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	coreRec.Eventf(pod(1), v1.EventTypeNormal, "Synced", "after shutdown")
	evRec.Eventf(pod(2), nil, v1.EventTypeNormal, "Synced", "Sync", "after shutdown")
	coreRec.Eventf(pod(3), "Bogus", "Synced", "bad type")
	evRec.Eventf(pod(4), nil, "Bogus", "Synced", "Sync", "bad type")

	s := p.Stats()
	if s.Core.DroppedClosed != 1 || s.Events.DroppedClosed != 1 || s.Core.InvalidType != 1 || s.Events.InvalidType != 1 {
		t.Fatalf("Stats: core closed %d invalid type %d, events closed %d invalid type %d; want 1 each",
			s.Core.DroppedClosed, s.Core.InvalidType, s.Events.DroppedClosed, s.Events.InvalidType)
	}
	if got := len(l.matching("Unable to record event", "web-1")); got != 1 {
		t.Errorf("manager log holds %d lines for the core/v1 event refused after Shutdown, want 1", got)
	}
	if got := len(l.matching("Unable to record event", "web-2")); got != 1 {
		t.Errorf("manager log holds %d lines for the events.k8s.io/v1 event refused after Shutdown, want 1", got)
	}
	if got := len(l.matching("Unsupported event type")); got != 2 {
		t.Errorf("manager log holds %d lines for the two events of a bad type, want 2 (one per API):\n%q", got, l.matching("Unsupported"))
	}
}
