// Command kube-apiserver records events through herald into a real
// kube-apiserver (with its etcd) started in this process, and prints what
// the apiserver stored. It needs nothing but Go modules:
//
//	cd examples/kube-apiserver && go run .
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/examples/kube-apiserver/apiserver"
	"github.com/heraldgo/herald/k8sadapter"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kube-apiserver:", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	quiet()
	fmt.Fprintln(out, "starting etcd and kube-apiserver on loopback...")
	start := time.Now()
	s, err := apiserver.Start()
	if err != nil {
		return err
	}
	defer s.Stop()
	fmt.Fprintf(out, "apiserver up in %v at %s\n\n", time.Since(start).Round(100*time.Millisecond), s.Config.Host)

	ctx := context.Background()
	if err := createNamespace(ctx, s.Client, "demo"); err != nil {
		return err
	}

	// A controller's event setup, with herald in place of record.NewBroadcaster.
	broadcaster := k8sadapter.NewBroadcaster(k8sadapter.WithContext(klog.NewContext(ctx, logr.Discard())))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.Client.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "demo-controller", Host: "node-1"})
	Script(recorder, "demo", func() {})
	broadcaster.Shutdown() // flushes every recorded event to the apiserver

	list, err := s.Client.CoreV1().Events("demo").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	PrintEvents(out, list.Items)
	st := broadcaster.Stats()
	fmt.Fprintf(out, "\nrecorded %d: created %d, patched %d (repeats %d, combined %d), spam-skipped %d, dropped %d, failed %d\n",
		st.Recorded, st.Created, st.Patched, st.Deduplicated, st.Aggregated, st.SpamSkipped,
		st.DroppedQueueFull+st.DroppedSinkQueue+st.DroppedClosed,
		st.FailedConstruction+st.FailedRejected+st.FailedRetries+st.FailedShutdown+st.FailedPanic+st.Abandoned)
	return nil
}

// Script records what a small controller would: a pod crash-looping
// (repeats), an image pulled with 12 different messages (combined), a flood
// about one pod (the spam filter). It calls tick before each event, for a
// fake clock to advance.
func Script(r record.EventRecorder, namespace string, tick func()) {
	pod := func(name string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID(namespace + "-" + name)}}
	}
	crash := pod("checkout-7d9f")
	for range 8 {
		tick()
		r.Event(crash, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
	}
	pull := pod("search-5c2b")
	for i := range 12 {
		tick()
		r.Eventf(pull, v1.EventTypeNormal, "Pulling", "Pulling image layer %d of 12", i+1)
	}
	flood := pod("cart-0")
	for range 40 {
		tick()
		r.Event(flood, v1.EventTypeWarning, "Unhealthy", "Readiness probe failed")
	}
}

// PrintEvents prints events like kubectl get events.
func PrintEvents(out io.Writer, events []v1.Event) {
	sort.Slice(events, func(i, j int) bool {
		a, b := events[i], events[j]
		if a.InvolvedObject.Name != b.InvolvedObject.Name {
			return a.InvolvedObject.Name < b.InvolvedObject.Name
		}
		return a.Message < b.Message
	})
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tTYPE\tREASON\tOBJECT\tCOUNT\tMESSAGE")
	for _, e := range events {
		fmt.Fprintf(tw, "%s\t%s\t%s\tpod/%s\t%d\t%s\n", e.Namespace, e.Type, e.Reason, e.InvolvedObject.Name, e.Count, e.Message)
	}
	tw.Flush()
}

func createNamespace(ctx context.Context, c kubernetes.Interface, name string) error {
	_, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	return err
}

// quiet keeps klog's global output (the apiserver's) out of the demo.
func quiet() {
	klog.SetLogger(logr.Discard())
}
