package recordtest_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldgo/herald/k8sadapter/recordtest"
)

// TestHostile2WaitForCancelled: WaitFor with an already-cancelled ctx
// still returns an event already kept that matches; with none, it
// returns ctx.Err() at once.
func TestHostile2WaitForCancelled(t *testing.T) {
	r := recordtest.New(recordtest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.WaitFor(ctx, func(recordtest.Event) bool { return true }); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitFor on nothing: %v", err)
	}
	if _, err := r.Wait(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait on nothing: %v", err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}
	r.Event(pod, v1.EventTypeNormal, "Synced", "ok")
	if e, err := r.WaitFor(ctx, func(e recordtest.Event) bool { return e.Reason == "Synced" }); err != nil || e.Reason != "Synced" {
		t.Errorf("WaitFor on a kept event with a cancelled ctx: %v %v", e, err)
	}
	if ev, err := r.Wait(ctx, 1); err != nil || len(ev) != 1 {
		t.Errorf("Wait(1) with one kept and a cancelled ctx: %v %v", ev, err)
	}
}

// TestHostile2WaitResetRace: Wait and WaitFor race with Reset and
// recording (-race); each waiter returns once enough events follow the
// last Reset, with no panic.
func TestHostile2WaitResetRace(t *testing.T) {
	r := recordtest.New(recordtest.Options{})
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r.Event(pod, v1.EventTypeNormal, "Synced", "ok")
			if i%7 == 0 {
				r.Reset()
			}
		}
	}()
	for range 4 {
		wg.Go(func() {
			for range 200 {
				ev, err := r.Wait(ctx, 3)
				if err != nil {
					t.Error(err)
					return
				}
				if len(ev) < 3 {
					t.Errorf("Wait(3) returned %d", len(ev))
				}
				if _, err := r.WaitFor(ctx, func(e recordtest.Event) bool { return e.Reason == "Synced" }); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var writer sync.WaitGroup
	writer.Go(func() { <-stop })
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		t.Error("waiters did not finish")
	}
	close(stop)
	<-done
}

// TestHostile2TypedNilObject: a typed-nil object does not panic; each
// call is kept with the reference error client-go would log.
func TestHostile2TypedNilObject(t *testing.T) {
	r := recordtest.New(recordtest.Options{})
	var pod *v1.Pod
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("Event on a typed-nil *v1.Pod panicked: %v", p)
			}
		}()
		r.Event(pod, v1.EventTypeNormal, "Synced", "ok")
		r.Eventf(pod, v1.EventTypeNormal, "Synced", "%d", 1)
		r.EventsRecorder().Eventf(pod, pod, v1.EventTypeNormal, "Synced", "Sync", "x")
	}()
	for _, e := range r.Events() {
		if !strings.Contains(e.Err, "Could not construct reference") {
			t.Errorf("event for a typed-nil object kept without the reference error: %v", e)
		}
	}
}
