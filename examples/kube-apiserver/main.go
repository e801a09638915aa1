// Command kube-apiserver records events through herald into a real
// kube-apiserver, with its etcd, started in this process, and prints what
// the apiserver stored, as kubectl get events would. It needs nothing but
// Go modules:
//
//	cd examples/kube-apiserver && go run .
//
// With -serve it only runs the apiserver, prints the environment that
// reaches it (apiserver.EnvHost, apiserver.EnvToken), one variable a
// line, and stops it on SIGINT or SIGTERM: the tests built with the tag
// herald_external_apiserver run against it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/heraldgo/herald/examples/kube-apiserver/apiserver"
	"github.com/heraldgo/herald/k8sadapter"
)

func main() {
	// The apiserver logs a great deal through klog's global logger;
	// herald logs to the logger of its WithContext context instead.
	klog.SetLogger(logr.Discard())
	logger := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	ctx := klog.NewContext(context.Background(), logger)
	serveOnly := flag.Bool("serve", false, "only run the apiserver, print the environment that reaches it, and stop it on SIGINT or SIGTERM")
	flag.Parse()
	run := run
	if *serveOnly {
		run = serve
	}
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kube-apiserver:", err)
		os.Exit(1)
	}
}

// run starts etcd and the apiserver, runs the demo against them and stops
// them.
func run(ctx context.Context, out io.Writer) error {
	fmt.Fprintln(out, "Starting etcd and kube-apiserver on loopback...")
	start := time.Now()
	s, err := apiserver.Start()
	if err != nil {
		return err
	}
	defer s.Stop()
	fmt.Fprintf(out, "apiserver ready in %v at %s\n\n", time.Since(start).Round(100*time.Millisecond), s.Config.Host)
	return demo(ctx, out, s.Client, "demo")
}

// serve starts etcd and the apiserver, prints the environment that reaches
// them, and stops them when the process is told to stop.
func serve(ctx context.Context, out io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := apiserver.Start()
	if err != nil {
		return err
	}
	defer s.Stop()
	fmt.Fprintf(out, "%s=%s\n%s=%s\n", apiserver.EnvHost, s.Config.Host, apiserver.EnvToken, s.Config.BearerToken)
	<-ctx.Done()
	return nil
}

// demo creates namespace ns and the controller's pods in it, records the
// controller's events through herald, and prints what the apiserver stored
// and herald's counters. herald logs to the logger of ctx.
func demo(ctx context.Context, out io.Writer, client kubernetes.Interface, ns string) error {
	pods, err := createPods(ctx, client, ns)
	if err != nil {
		return err
	}

	// A controller's event setup, with herald in place of
	// record.NewBroadcaster().
	broadcaster := k8sadapter.NewBroadcaster(k8sadapter.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	c := controller{recorder: broadcaster.NewRecorder(scheme.Scheme, source), pods: pods}
	c.crashLoop()
	c.pullImage()
	c.flood()
	broadcaster.Shutdown() // returns once every recorded event reached the apiserver

	list, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	printEvents(out, list.Items, time.Now())
	fmt.Fprintln(out)
	printStats(out, broadcaster.Stats())
	return nil
}

// source is the event source of the controller's recorder.
var source = v1.EventSource{Component: "demo-controller", Host: "node-1"}

// pods are the objects the controller records events about.
type pods struct {
	crashing, pulling, probed *v1.Pod
}

// createPods creates namespace ns and the controller's pods in it: events
// are stored in the namespace of their object, which must exist.
func createPods(ctx context.Context, client kubernetes.Interface, ns string) (pods, error) {
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return pods{}, err
	}
	create := func(name, image string) (*v1.Pod, error) {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: image}}},
		}
		return client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	}
	var p pods
	var err error
	if p.crashing, err = create("checkout-7d9f", "registry.example/checkout:1.4"); err != nil {
		return pods{}, err
	}
	if p.pulling, err = create("search-5c2b", "registry.example/search:2.0"); err != nil {
		return pods{}, err
	}
	if p.probed, err = create("cart-0", "registry.example/cart:0.9"); err != nil {
		return pods{}, err
	}
	return p, nil
}

// controller records the events a small controller would about its pods:
// a crash loop, an image pulled layer by layer, a failing probe.
type controller struct {
	recorder record.EventRecorder
	pods     pods
	// tick, if not nil, is called before each event, for a fake clock
	// to move as a real one would.
	tick func()
}

func (c controller) eventf(pod *v1.Pod, eventtype, reason, messageFmt string, args ...any) {
	if c.tick != nil {
		c.tick()
	}
	c.recorder.Eventf(pod, eventtype, reason, messageFmt, args...)
}

// crashLoop records the same event 8 times: the apiserver keeps one event
// with count 8.
func (c controller) crashLoop() {
	for range 8 {
		c.eventf(c.pods.crashing, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container app in pod %s", c.pods.crashing.Name)
	}
}

// pullImage records 12 events that differ only in their message: from the
// tenth different message about one object and reason within ten
// minutes, they are combined into one "(combined from similar events)"
// event.
func (c controller) pullImage() {
	for i := range 12 {
		c.eventf(c.pods.pulling, v1.EventTypeNormal, "Pulling", "Pulling image layer %d of 12", i+1)
	}
}

// flood records a failing probe 40 times in a tight loop: the spam filter
// lets 25 events about one object through, then one every five minutes.
func (c controller) flood() {
	for range 40 {
		c.eventf(c.pods.probed, v1.EventTypeWarning, "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503")
	}
}

// printEvents prints events as kubectl get events does, most recently seen
// last, with the count.
func printEvents(out io.Writer, events []v1.Event, now time.Time) {
	sort.SliceStable(events, func(i, j int) bool {
		a, b := events[i], events[j]
		if !a.LastTimestamp.Equal(&b.LastTimestamp) {
			return a.LastTimestamp.Before(&b.LastTimestamp)
		}
		return a.Name < b.Name
	})
	tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "LAST SEEN\tTYPE\tREASON\tOBJECT\tCOUNT\tMESSAGE")
	for _, e := range events {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s/%s\t%d\t%s\n", duration.HumanDuration(now.Sub(e.LastTimestamp.Time)),
			e.Type, e.Reason, strings.ToLower(e.InvolvedObject.Kind), e.InvolvedObject.Name, e.Count, e.Message)
	}
	tw.Flush()
}

// printStats prints herald's counters. Each recorded event has one fate
// (written, skipped, dropped, failed or abandoned), so the first sum
// holds once the queues are empty; the written events are split two ways.
func printStats(out io.Writer, st k8sadapter.Stats) {
	written := st.Created + st.Patched
	dropped := st.InvalidObject + st.InvalidType + st.DroppedClosed + st.DroppedSinkQueue
	failed := st.FailedConstruction + st.FailedRejected + st.FailedForbidden + st.FailedRetries + st.FailedShutdown + st.FailedPanic
	fmt.Fprintf(out, "herald: recorded %d = written %d + spam-skipped %d + dropped %d + failed %d + abandoned %d\n",
		st.Recorded, written, st.SpamSkipped, dropped, failed, st.Abandoned)
	fmt.Fprintf(out, "  written %d = created %d + patched %d = first occurrences %d + repeats %d + combined %d; retries %d\n",
		written, st.Created, st.Patched, written-st.Deduplicated-st.Aggregated, st.Deduplicated, st.Aggregated, st.Retries)
}
