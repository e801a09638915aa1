// Command tour walks through herald in a few seconds, with no cluster and
// no flags: typed fan-out with each full-queue policy, a storm of events
// folded by the correlator, the same storm recorded through the Kubernetes
// adapter into client-go's fake clientset, and a clean shutdown that says
// what happened to every event. Run it with:
//
//	go run ./examples/tour
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	testclock "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/correlate"
	"github.com/heraldgo/herald/k8sadapter"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tour:", err)
		os.Exit(1)
	}
}

// run plays the tour's three steps in order, each under its title.
func run(out io.Writer) error {
	steps := []struct {
		title string
		run   func(io.Writer) error
	}{
		{"1. Typed fan-out: one publisher, three consumers, three policies", fanOut},
		{"2. A storm of alerts, folded by the correlator", correlateAlerts},
		{"3. The same idea for Kubernetes: herald as client-go's event recorder", kubernetes},
	}
	for _, s := range steps {
		fmt.Fprintf(out, "\n%s\n%s\n", s.title, strings.Repeat("─", len([]rune(s.title))))
		if err := s.run(out); err != nil {
			return err
		}
	}
	return nil
}

// Order is a domain event: herald carries any type.
type Order struct {
	ID    int
	Total int
}

// fanOut publishes 20 orders to three consumers that read only at the
// end, and prints what each policy kept and dropped.
func fanOut(out io.Writer) error {
	ctx := context.Background()
	b := broadcast.New[Order](broadcast.Options{QueueLength: 5})
	// Each consumer chooses what happens when it falls behind.
	audit, _ := b.WatchWith(broadcast.WatchOptions{QueueLength: 100, Full: broadcast.Block})
	dashboard, _ := b.WatchWith(broadcast.WatchOptions{Full: broadcast.DropOldest}) // wants the freshest
	mailer, _ := b.WatchWith(broadcast.WatchOptions{Full: broadcast.DropNewest})    // keeps what it has

	// Nobody reads until the end: the two small queues overflow.
	for i := 1; i <= 20; i++ {
		if err := b.Publish(ctx, Order{ID: i, Total: 10 * i}); err != nil {
			return err
		}
	}
	// Shutdown delivers everything queued, then closes the watchers.
	if err := b.Shutdown(ctx); err != nil {
		return err
	}

	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONSUMER\tPOLICY\tQUEUE\tRECEIVED\tDROPPED\tORDER IDS")
	for _, c := range []struct {
		name   string
		policy broadcast.FullPolicy
		queue  int
		w      *broadcast.Watcher[Order]
	}{{"audit", broadcast.Block, 100, audit}, {"dashboard", broadcast.DropOldest, 5, dashboard}, {"mailer", broadcast.DropNewest, 5, mailer}} {
		var ids []string
		for o := range c.w.All() {
			ids = append(ids, fmt.Sprint(o.ID))
		}
		fmt.Fprintf(tw, "%s\t%v\t%d\t%d\t%d\t%s\n", c.name, c.policy, c.queue, len(ids), c.w.Dropped(), strings.Join(ids, " "))
	}
	tw.Flush()
	s := b.Stats()
	fmt.Fprintf(out, "published %d; dropped: %d newest, %d oldest; nothing dropped silently.\n", s.Published, s.DroppedNewest, s.DroppedOldest)
	return nil
}

// Alert is another domain event, correlated by plain struct keys.
type Alert struct {
	Service, Check, Message string
}

// correlateAlerts folds a storm of alerts, one a second on a fake clock,
// and prints a line per key with the correlator's counts: COUNT as last
// recorded, SKIPPED what the spam filter skipped after it, which the
// correlator reports in a summary when asked (Flush).
func correlateAlerts(out io.Writer) error {
	clock := testclock.NewFakeClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	var t alertTable
	c := newAlertCorrelator(clock, t.summarized)
	for _, a := range alertStorm() {
		clock.Step(time.Second)
		r, err := c.Correlate(a)
		if err != nil {
			return err
		}
		if !r.Skip { // skipped: the summary will say
			t.recorded(r)
		}
	}
	c.Flush() // the storm is over: report what no recorded count carried
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tCHECK\tCOUNT\tSKIPPED\tMESSAGE")
	for _, l := range t.lines {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", l.alert.Service, l.alert.Check, l.count, l.skipped, l.alert.Message)
	}
	tw.Flush()
	// Every alert is either counted on a line (COUNT) or skipped as spam
	// and reported in a summary (SKIPPED); a combined line counts the
	// similar alerts it stands for.
	s := c.Stats()
	fmt.Fprintf(out, "%d alerts in: %d counted on the %d lines above (COUNT; the combined line stands for %d similar ones)\n",
		s.Correlated, s.Correlated-s.Skipped, s.New, s.Combined)
	fmt.Fprintf(out, "           + %d skipped as spam (SKIPPED: never written, reported in %d summaries).\n", s.Summarized, s.Summaries)
	return nil
}

// newAlertCorrelator returns a correlator keyed by the whole alert that
// combines alerts of one service and check with other messages, limits
// each service to 25 at once, then 1 per 5 minutes, and hands report the
// summaries of what that skips.
func newAlertCorrelator(clock *testclock.FakeClock, report func(correlate.Summary[Alert, Alert])) *correlate.Correlator[Alert, Alert] {
	return correlate.New(func(a Alert) Alert { return a }, correlate.Options[Alert, Alert]{
		Group: func(a Alert) (Alert, Alert) { // same service and check, another message
			return Alert{Service: a.Service, Check: a.Check}, Alert{Message: a.Message}
		},
		Combine: func(a Alert, _ time.Time) Alert {
			a.Message = correlate.CombinedPrefix + a.Message
			return a
		},
		Spam:   func(a Alert) Alert { return Alert{Service: a.Service} }, // 25 at once, then 1 per 5 min
		Clock:  clock,
		Report: report,
	})
}

// alertStorm returns the storm: exact repeats, near-repeats that differ
// only in their message, and a flood from one service.
func alertStorm() []Alert {
	var storm []Alert
	for range 6 {
		storm = append(storm, Alert{"db", "disk", "disk 91% full"}) // repeats
	}
	for i := range 14 {
		storm = append(storm, Alert{"api", "latency", fmt.Sprintf("p99 %dms", 400+10*i)}) // near-repeats
	}
	for i := range 40 {
		storm = append(storm, Alert{"batch", fmt.Sprint("job-", i%4), "job failed"}) // a flood from one service
	}
	return storm
}

// alertTable is what an alert store keeps: a line per key, in the order
// the keys first came, with the alert as last written, its count, and
// the skipped alerts the correlator's summaries reported.
type alertTable struct {
	lines []*alertLine
	byKey map[Alert]*alertLine
}

type alertLine struct {
	alert          Alert
	count, skipped int
}

// line returns the line of key k, a new one showing a if there is none.
func (t *alertTable) line(k, a Alert) *alertLine {
	if t.byKey == nil {
		t.byKey = map[Alert]*alertLine{}
	}
	l := t.byKey[k]
	if l == nil {
		l = &alertLine{alert: a}
		t.byKey[k] = l
		t.lines = append(t.lines, l)
	}
	return l
}

// recorded writes a recorded result on its key's line.
func (t *alertTable) recorded(r correlate.Result[Alert, Alert]) {
	l := t.line(r.Key, r.Event)
	l.alert, l.count = r.Event, r.Count
}

// summarized adds a summary's skipped alerts to its key's line.
func (t *alertTable) summarized(s correlate.Summary[Alert, Alert]) {
	t.line(s.Key, s.Event).skipped += s.Count
}

// kubernetes records a storm of pod events through the Kubernetes adapter
// into client-go's fake clientset, then prints the events stored and what
// became of every recorded one.
func kubernetes(out io.Writer) error {
	client := fake.NewClientset()
	clock := testclock.NewFakeClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))
	quiet := klog.NewContext(context.Background(), logr.Discard())

	// The one line that changes in a controller: record.NewBroadcaster()
	// becomes k8sadapter.NewBroadcaster(). Everything below is client-go's.
	broadcaster := k8sadapter.NewBroadcaster(k8sadapter.WithContext(quiet), k8sadapter.WithClock(clock))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "tour-controller"})
	recordIncidents(recorder, clock)

	// Shutdown flushes: everything recorded above reaches the apiserver.
	start := time.Now()
	if err := broadcaster.ShutdownContext(context.Background()); err != nil {
		return err
	}
	flushed := time.Since(start)

	if err := printEvents(out, client, clock.Now()); err != nil {
		return err
	}
	s := broadcaster.Stats()
	fmt.Fprintf(out, "\nShutdown flushed in %v. What happened to the %d events recorded:\n", flushed.Round(time.Millisecond), s.Recorded)
	printStats(out, s)
	return nil
}

// shopPod returns a pod of namespace shop.
func shopPod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name)}}
}

// recordIncidents records what a busy namespace produces: a crash loop,
// an image pulled layer by layer, a flood of failed probes, and a few pods
// scheduled.
func recordIncidents(recorder record.EventRecorder, clock *testclock.FakeClock) {
	crash := shopPod("checkout-7d9f")
	for range 8 {
		clock.Step(10 * time.Second)
		recorder.Event(crash, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
	}
	pull := shopPod("search-5c2b")
	for i := range 12 {
		clock.Step(time.Second)
		recorder.Eventf(pull, v1.EventTypeNormal, "Pulling", "Pulling image layer %d of 12", i+1)
	}
	flood := shopPod("cart-0")
	for range 40 {
		recorder.Event(flood, v1.EventTypeWarning, "Unhealthy", "Readiness probe failed")
	}
	for i := range 5 {
		recorder.Eventf(shopPod(fmt.Sprint("web-", i)), v1.EventTypeNormal, "Scheduled", "Successfully assigned shop/web-%d to node-%d", i, i%2)
	}
}

// printEvents prints the events stored in namespace shop as kubectl
// would, oldest first, with their age at now.
func printEvents(out io.Writer, client *fake.Clientset, now time.Time) error {
	list, err := client.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err
	}
	events := list.Items
	sort.Slice(events, func(i, j int) bool {
		if !events[i].LastTimestamp.Equal(&events[j].LastTimestamp) {
			return events[i].LastTimestamp.Before(&events[j].LastTimestamp)
		}
		return events[i].InvolvedObject.Name < events[j].InvolvedObject.Name
	})
	fmt.Fprintln(out, "$ kubectl get events -n shop   (client-go's fake apiserver)")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LAST SEEN\tTYPE\tREASON\tOBJECT\tCOUNT\tMESSAGE")
	for _, e := range events {
		fmt.Fprintf(tw, "%v\t%s\t%s\tpod/%s\t%d\t%s\n", now.Sub(e.LastTimestamp.Time).Round(time.Second), e.Type, e.Reason,
			e.InvolvedObject.Name, e.Count, e.Message)
	}
	tw.Flush()
	return nil
}

// printStats prints what became of the recorded events: the five lines
// with a count add up to Recorded once the queues are empty (each event
// has one fate), and the written events are split two ways beneath.
func printStats(out io.Writer, s k8sadapter.Stats) {
	written := s.Created + s.Patched
	dropped := s.InvalidObject + s.InvalidType + s.DroppedClosed + s.DroppedSinkQueue
	failed := s.FailedConstruction + s.FailedRejected + s.FailedForbidden + s.FailedRetries + s.FailedShutdown + s.FailedPanic
	fmt.Fprintf(out, "%6d  written: %d created, %d patched into an earlier event\n", written, s.Created, s.Patched)
	fmt.Fprintf(out, "        as %d first occurrences, %d repeats of them (count > 1), %d writes of combined events\n",
		written-s.Deduplicated-s.Aggregated, s.Deduplicated, s.Aggregated)
	fmt.Fprintf(out, "%6d  skipped by the spam filter (counted, never written, as client-go skips them)\n", s.SpamSkipped)
	fmt.Fprintf(out, "%6d  dropped (invalid, queue full, after shutdown)\n", dropped)
	fmt.Fprintf(out, "%6d  failed at the sink\n", failed)
	fmt.Fprintf(out, "%6d  abandoned at the shutdown deadline\n", s.Abandoned)
}
