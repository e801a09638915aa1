package k8sadapter_test

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	testclocks "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/k8sadapter"
)

// noMeta is a runtime.Object without object metadata.
type noMeta struct{}

func (noMeta) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (noMeta) DeepCopyObject() runtime.Object   { return noMeta{} }

// TestBadInput feeds the public API what a careless caller might: each
// case must end in its documented outcome (refused and counted, or
// accepted as client-go accepts it), never a panic, never a block.
func TestBadInput(t *testing.T) {
	type outcome struct {
		invalidObject, invalidType, created uint64
	}
	tests := []struct {
		name   string
		record func(r record.EventRecorder)
		want   outcome
	}{
		{"nil object", func(r record.EventRecorder) { r.Event(nil, v1.EventTypeNormal, "R", "m") }, outcome{invalidObject: 1}},
		{"typed nil object", func(r record.EventRecorder) { var p *v1.Pod; r.Event(p, v1.EventTypeNormal, "R", "m") }, outcome{invalidObject: 1}},
		{"object without metadata", func(r record.EventRecorder) { r.Event(noMeta{}, v1.EventTypeNormal, "R", "m") }, outcome{invalidObject: 1}},
		{"type other than Normal or Warning", func(r record.EventRecorder) { r.Event(pod("a"), "Error", "R", "m") }, outcome{invalidType: 1}},
		{"empty type", func(r record.EventRecorder) { r.Event(pod("a"), "", "R", "m") }, outcome{invalidType: 1}},
		// client-go does not validate reason or message; neither does herald
		// (the apiserver decides).
		{"empty reason", func(r record.EventRecorder) { r.Event(pod("a"), v1.EventTypeNormal, "", "m") }, outcome{created: 1}},
		{"1 MiB message", func(r record.EventRecorder) {
			r.Event(pod("a"), v1.EventTypeNormal, "Big", strings.Repeat("x", 1<<20))
		}, outcome{created: 1}},
		{"object name that is not a valid event name", func(r record.EventRecorder) {
			r.Event(&v1.ObjectReference{Kind: "IPAddress", Name: "2001:db8::1"}, v1.EventTypeNormal, "R", "m")
		}, outcome{created: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newBroadcaster(t, k8sadapter.WithSleepDuration(0))
			e.StartRecordingToSink(&scriptSink{})
			tc.record(recorder(e))
			join(t, e)
			s := e.Stats()
			if got := (outcome{s.InvalidObject, s.InvalidType, s.Created}); got != tc.want {
				t.Errorf("outcome %+v, want %+v (Stats %+v)", got, tc.want, s)
			}
		})
	}
}

func TestBadInputToTheBroadcaster(t *testing.T) {
	e := newBroadcaster(t)
	for name, w := range map[string]interface{ Stop() }{
		"nil sink":     e.StartRecordingToSink(nil),
		"nil handler":  e.StartEventWatcher(nil),
		"nil log func": e.StartLogging(nil),
	} {
		if w == nil {
			t.Errorf("%s: nil watch", name)
			continue
		}
		w.Stop()
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("ShutdownContext(nil) did not panic")
			}
		}()
		//lint:ignore SA1012 a nil context is the point of the test
		e.ShutdownContext(nil)
	}()
	c := k8sadapter.NewEventCorrelator(testclocks.NewFakeClock(time.Now()))
	if r, err := c.EventCorrelate(nil); err == nil || r != nil {
		t.Errorf("EventCorrelate(nil) = %v, %v; want nil and an error, as client-go", r, err)
	}
	c.UpdateState(nil) // ignored, no panic

	// A custom key function that panics: the event is recorded as it is.
	p := k8sadapter.NewEventCorrelatorWithOptions(record.CorrelatorOptions{
		SpamKeyFunc: func(*v1.Event) string { panic("bug in a key function") },
	})
	ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Count: 1}
	if r, err := p.EventCorrelate(ev); err == nil || r == nil || r.Event == nil || r.Event.Name != "x" {
		t.Errorf("EventCorrelate with a panicking SpamKeyFunc = %+v, %v; want the event and an error", r, err)
	}
	// Shutdown twice, and from a cancelled context afterwards, is fine.
	e.Shutdown()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.ShutdownContext(ctx); err != nil {
		t.Errorf("ShutdownContext after Shutdown = %v, want nil", err)
	}
}
