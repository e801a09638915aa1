package k8sadapter_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/k8sadapter"
)

// script records what a controller might: a crash-looping pod (repeats),
// an image pulled with 12 different messages (combined), a flood about one
// object (spam), and events about many objects.
func script(r record.EventRecorder) {
	crash := pod("crash")
	for range 8 {
		r.Event(crash, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
	}
	pull := pod("pull")
	for i := range 12 {
		r.Eventf(pull, v1.EventTypeNormal, "Pulling", "Pulling image layer %d of 12", i+1)
	}
	flood := pod("flood")
	for i := range 40 {
		r.Eventf(flood, v1.EventTypeWarning, "Unhealthy", "Readiness probe failed: attempt %d", i)
	}
	for i := range 50 {
		r.Eventf(pod(fmt.Sprint("web-", i)), v1.EventTypeNormal, "Scheduled", "Successfully assigned web-%d", i)
	}
}

// stored lists the events in client, one line per event, without names
// and timestamps: what must be the same whichever broadcaster recorded.
func stored(t *testing.T, client *fake.Clientset) []string {
	t.Helper()
	list, err := client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range list.Items {
		lines = append(lines, fmt.Sprintf("%s %s/%s %s %s count=%d %q src=%s", e.Namespace, e.InvolvedObject.Kind, e.InvolvedObject.Name,
			e.Type, e.Reason, e.Count, e.Message, e.Source.Component))
	}
	sort.Strings(lines)
	return lines
}

// TestDropInStoresWhatClientGoStores records the same script through
// client-go's broadcaster and herald's, each into client-go's fake
// clientset behind client-go's own EventSinkImpl, and compares what was
// stored. The fake clientset is trackerClientset: on NewClientset's
// tracker, whose writes take milliseconds under -race, client-go's wait
// came near the failsafe, and herald's Shutdown near its 10 s timeout
// (which would abandon events), on a loaded machine.
func TestDropInStoresWhatClientGoStores(t *testing.T) {
	ctx := klog.NewContext(context.Background(), logr.Discard())
	source := v1.EventSource{Component: "controller", Host: "node-1"}

	// client-go: its Shutdown drops what is queued, so wait for a last
	// event to be stored; the sink writes in order.
	anchorClient := trackerClientset()
	anchor := record.NewBroadcaster(record.WithContext(ctx))
	anchor.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: anchorClient.CoreV1().Events("")})
	ar := anchor.NewRecorder(scheme.Scheme, source)
	script(ar)
	ar.Event(pod("sentinel"), v1.EventTypeNormal, "Done", "done")
	deadline := time.Now().Add(failsafe)
	for !strings.Contains(strings.Join(stored(t, anchorClient), "\n"), "Done") {
		if time.Now().After(deadline) {
			t.Fatal("client-go did not store the sentinel event")
		}
		time.Sleep(5 * time.Millisecond) // bounded poll of client-go, which offers no flush
	}
	anchor.Shutdown()

	heraldClient := trackerClientset()
	herald := k8sadapter.NewBroadcaster(k8sadapter.WithContext(ctx))
	herald.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: heraldClient.CoreV1().Events("")})
	hr := herald.NewRecorder(scheme.Scheme, source)
	script(hr)
	hr.Event(pod("sentinel"), v1.EventTypeNormal, "Done", "done")
	herald.Shutdown() // flushes: no waiting needed

	want, got := stored(t, anchorClient), stored(t, heraldClient)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("herald stored\n%s\n\nclient-go stored\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The script exercised every path.
	all := strings.Join(got, "\n")
	for _, s := range []string{
		"count=8 \"Back-off", // repeats counted
		"count=3 \"(combined from similar events): Pulling image layer 12",  // 10th to 12th message combined
		"count=16 \"(combined from similar events): Readiness probe failed", // 25 passed the spam filter, 15 did not
	} {
		if !strings.Contains(all, s) {
			t.Errorf("stored events lack %q:\n%s", s, all)
		}
	}
	s := herald.Stats()
	if s.Recorded != 111 || s.Created+s.Patched+s.SpamSkipped != s.Queued || s.Aggregated != 3+16 || s.SpamSkipped != 15 || s.Deduplicated != 7 {
		t.Errorf("Stats() = %+v, want 111 recorded, 7 deduplicated, 19 aggregated, 15 skipped, and every queued event accounted for", s)
	}
}

// TestDefaultsAsDocumented: the defaults' docs give their values, which
// go doc does not show (they are set from an internal package's).
func TestDefaultsAsDocumented(t *testing.T) {
	if k8sadapter.DefaultSleepDuration != 10*time.Second || k8sadapter.DefaultMaxTries != 12 ||
		k8sadapter.DefaultQueueLength != 1000 || k8sadapter.DefaultShutdownTimeout != 10*time.Second {
		t.Errorf("defaults pause %v, %d tries, queue %d, shutdown %v; their docs say 10s, 12, 1000, 10s",
			k8sadapter.DefaultSleepDuration, k8sadapter.DefaultMaxTries, k8sadapter.DefaultQueueLength, k8sadapter.DefaultShutdownTimeout)
	}
}
