// Command controller is a controller-shaped program that records events
// with herald where it used to use client-go's record.NewBroadcaster. The
// switch is one line; everything else is client-go's API. Here the apiserver
// is client-go's fake clientset, so the program runs anywhere:
//
//	go run ./examples/controller
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/go-logr/logr/funcr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/k8sadapter"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
}

// controller reconciles pods and says what it did with events, as
// controllers do.
type controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
}

// reconcile handles one pod and records an event saying what it did.
func (c *controller) reconcile(ctx context.Context, pod *v1.Pod, attempt int) {
	switch {
	case pod.Labels["image"] == "missing":
		c.recorder.Eventf(pod, v1.EventTypeWarning, "Failed", "Failed to pull image %q: not found", "registry.example/app:v2")
	case attempt == 0:
		c.recorder.Event(pod, v1.EventTypeNormal, "Scheduled", "Successfully assigned "+pod.Namespace+"/"+pod.Name)
	default:
		c.recorder.Eventf(pod, v1.EventTypeNormal, "Synced", "Pod synced (generation %d)", attempt)
	}
}

// run records the events of a few reconciles through herald, then prints
// what reached the apiserver and what became of every recorded event.
func run(out io.Writer) error {
	// A logger that prints what StartStructuredLogging logs, shortened.
	var logLines []string
	logger := funcr.New(func(_, args string) { logLines = append(logLines, args) }, funcr.Options{Verbosity: 2})
	ctx := klog.NewContext(context.Background(), logger)
	client := fake.NewClientset()

	// The one line that changes:
	//   broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster := k8sadapter.NewBroadcaster(k8sadapter.WithContext(ctx))
	broadcaster.StartStructuredLogging(2)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	c := &controller{
		client:   client,
		recorder: broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "example-controller"}),
	}
	c.reconcileAll(ctx)

	// Shutdown flushes: what was recorded reaches the apiserver before it
	// returns (client-go's would drop what is still queued).
	broadcaster.Shutdown()

	if err := printEvents(out, client); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nStructured log: %d lines, the first:\n  %s\n", len(logLines), firstLine(logLines))
	printStats(out, broadcaster.Stats())
	return nil
}

// reconcileAll reconciles three pods four times each, one of them with an
// image that cannot be pulled.
func (c *controller) reconcileAll(ctx context.Context) {
	pods := []*v1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "u0"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", UID: "u1"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "worker-0", Namespace: "shop", UID: "u2", Labels: map[string]string{"image": "missing"}}},
	}
	for attempt := range 4 {
		for _, p := range pods {
			c.reconcile(ctx, p, attempt)
		}
	}
}

// printEvents lists the events the apiserver stored in namespace shop, as a
// table sorted by object, reason and message.
func printEvents(out io.Writer, client kubernetes.Interface) error {
	list, err := client.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		return a.InvolvedObject.Name+a.Reason+a.Message < b.InvolvedObject.Name+b.Reason+b.Message
	})
	fmt.Fprintln(out, "Events stored in the apiserver:")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tREASON\tOBJECT\tCOUNT\tMESSAGE")
	for _, e := range list.Items {
		fmt.Fprintf(tw, "%s\t%s\tpod/%s\t%d\t%s\n", e.Type, e.Reason, e.InvolvedObject.Name, e.Count, e.Message)
	}
	tw.Flush()
	return nil
}

// printStats accounts for every recorded event. Each has one fate:
// written, skipped, dropped, failed or abandoned. The written ones are
// split two ways: created or patched, and first occurrence, repeat or
// combined event.
func printStats(out io.Writer, s k8sadapter.Stats) {
	written := s.Created + s.Patched
	fmt.Fprintf(out, "\nrecorded %d = written %d + spam-skipped %d + dropped %d + failed %d + abandoned %d\n",
		s.Recorded, written, s.SpamSkipped,
		s.InvalidObject+s.InvalidType+s.DroppedSinkQueue+s.DroppedClosed,
		s.FailedConstruction+s.FailedRejected+s.FailedForbidden+s.FailedRetries+s.FailedShutdown+s.FailedPanic, s.Abandoned)
	fmt.Fprintf(out, "written %d = created %d + patched %d = first occurrences %d + repeats %d + combined %d\n",
		written, s.Created, s.Patched, written-s.Deduplicated-s.Aggregated, s.Deduplicated, s.Aggregated)
}

// firstLine returns the first log line, trimmed, or "(none)".
func firstLine(lines []string) string {
	if len(lines) == 0 {
		return "(none)"
	}
	return strings.TrimSpace(lines[0])
}
