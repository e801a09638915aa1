// Command bench runs herald and the code it is modelled on —
// apimachinery's watch.Broadcaster and client-go's EventCorrelator — on the
// same workloads in one process, prints them side by side with the ratio,
// and draws fan-out time against watcher count as an SVG chart, written to
// $TMPDIR/herald-fanout.svg unless -out names another file (the path is
// printed first).
//
//	go run ./examples/bench            # about a minute
//	go run ./examples/bench -quick     # under 30 seconds
//	go run ./examples/bench -out fanout.svg
//
// Numbers from one run on one machine: compare the ratios, not the times.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/record"
	testclock "k8s.io/utils/clock/testing"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/k8sadapter"
)

func main() {
	quick := flag.Bool("quick", false, "shorter runs (under 30 s), noisier numbers")
	out := flag.String("out", filepath.Join(os.TempDir(), "herald-fanout.svg"),
		"`file` to write the SVG chart of fan-out time against watchers to")
	flag.Parse()
	benchtime := "1s"
	if *quick {
		benchtime = "150ms"
	}
	if err := run(os.Stdout, benchtime, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// result is one workload measured for the anchor and for herald.
type result struct {
	group, name     string
	anchor, herald  testing.BenchmarkResult
	heraldAlt       *testing.BenchmarkResult // herald read through Events, for fan-out
	anchorName, alt string
	watchers        int
}

// run measures every workload, prints the table and writes the chart to
// svgPath.
func run(out io.Writer, benchtime, svgPath string) error {
	testing.Init()
	if err := flag.Set("test.benchtime", benchtime); err != nil {
		return err
	}
	setup := fmt.Sprintf("GOMAXPROCS=%d, benchtime %s per measurement, %s/%s", runtime.GOMAXPROCS(0), benchtime, runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(out, "herald vs its anchors, %s\nthe chart goes to %s\n\n", setup, svgPath)

	var results []result
	for _, n := range []int{1, 10, 100} {
		fmt.Fprintf(out, "measuring fan-out to %s...\n", watchers(n))
		anchor := testing.Benchmark(func(b *testing.B) { fanOutAnchor(b, n) })
		all := testing.Benchmark(func(b *testing.B) { fanOutHerald(b, n, true) })
		events := testing.Benchmark(func(b *testing.B) { fanOutHerald(b, n, false) })
		results = append(results, result{group: "fan-out, lossless", name: watchers(n), watchers: n,
			anchor: anchor, herald: all, heraldAlt: &events, anchorName: "apimachinery", alt: "Events"})
	}
	for _, p := range []string{"repeat", "new", "aggregate"} {
		fmt.Fprintf(out, "measuring correlation, %s...\n", p)
		anchor := testing.Benchmark(func(b *testing.B) { correlateBench(b, p, false) })
		herald := testing.Benchmark(func(b *testing.B) { correlateBench(b, p, true) })
		results = append(results, result{group: "correlate a core/v1 event", name: p, anchor: anchor, herald: herald, anchorName: "client-go"})
	}

	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "work\tcase\tanchor\tanchor ns/op\therald ns/op\tspeed-up\therald allocs/op\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%.1f×\t%d\t\n", r.group, r.name, r.anchorName, r.anchor.NsPerOp(), r.herald.NsPerOp(),
			ratio(r.anchor, r.herald), r.herald.AllocsPerOp())
		if r.heraldAlt != nil {
			fmt.Fprintf(tw, "%s\t%s, read via %s\t%s\t%d\t%d\t%.1f×\t%d\t\n", r.group, r.name, r.alt, r.anchorName, r.anchor.NsPerOp(),
				r.heraldAlt.NsPerOp(), ratio(r.anchor, *r.heraldAlt), r.heraldAlt.AllocsPerOp())
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := os.WriteFile(svgPath, []byte(chart(results, setup)), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nchart of fan-out time per value: %s\n", svgPath)
	return nil
}

// watchers says "1 watcher", "10 watchers".
func watchers(n int) string {
	if n == 1 {
		return "1 watcher"
	}
	return fmt.Sprintf("%d watchers", n)
}

// ratio is how many times faster herald ran than the anchor.
func ratio(anchor, herald testing.BenchmarkResult) float64 {
	if herald.NsPerOp() == 0 {
		return math.Inf(1)
	}
	return float64(anchor.T.Nanoseconds()) / float64(anchor.N) / (float64(herald.T.Nanoseconds()) / float64(herald.N))
}

// value is the fanned-out payload: a pointer, as Kubernetes events are.
type value struct{ _ int }

func (*value) GetObjectKind() schema.ObjectKind    { return schema.EmptyObjectKind }
func (v *value) DeepCopyObject() k8sruntime.Object { c := *v; return &c }

// fanOutHerald: one publisher, n watchers draining as fast as they can,
// time per value until every watcher has it.
func fanOutHerald(b *testing.B, n int, all bool) {
	b.ReportAllocs()
	bc := broadcast.New[*value](broadcast.Options{})
	defer bc.Shutdown(context.Background())
	var wg sync.WaitGroup
	ws := make([]*broadcast.Watcher[*value], n)
	read := broadcast.ReadChannel // read by Events
	if all {
		read = broadcast.ReadQueue
	}
	for i := range ws {
		ws[i], _ = bc.WatchWith(broadcast.WatchOptions{Read: read})
		wg.Add(1)
		go func(w *broadcast.Watcher[*value]) {
			defer wg.Done()
			got := 0
			if all {
				for range w.All() {
					if got++; got == b.N {
						return
					}
				}
				return
			}
			for range w.Events() {
				if got++; got == b.N {
					return
				}
			}
		}(ws[i])
	}
	v := &value{}
	b.ResetTimer()
	for range b.N {
		_ = bc.Publish(context.Background(), v)
	}
	wg.Wait()
	b.StopTimer()
	for _, w := range ws {
		w.Stop()
	}
}

// fanOutAnchor: the same as fanOutHerald, through apimachinery's
// watch.Broadcaster.
func fanOutAnchor(b *testing.B, n int) {
	b.ReportAllocs()
	m := watch.NewBroadcaster(broadcast.DefaultQueueLength, watch.WaitIfChannelFull)
	defer m.Shutdown()
	var wg sync.WaitGroup
	ws := make([]watch.Interface, n)
	for i := range ws {
		ws[i], _ = m.Watch()
		wg.Add(1)
		go func(w watch.Interface) {
			defer wg.Done()
			got := 0
			for range w.ResultChan() {
				if got++; got == b.N {
					return
				}
			}
		}(ws[i])
	}
	v := &value{}
	b.ResetTimer()
	for range b.N {
		_ = m.Action(watch.Added, v)
	}
	wg.Wait()
	b.StopTimer()
	for _, w := range ws {
		w.Stop()
	}
}

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// event returns a kubelet warning about pod obj with message msg.
func event(obj, msg string) *v1.Event {
	return &v1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: obj + ".18ea4cfade9b8953", Namespace: "default"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: obj,
			UID: "6f0b2c2e-1f0d-4c1e-9d1a-1a2b3c4d5e6f", APIVersion: "v1", FieldPath: "spec.containers{app}"},
		Reason: "BackOff", Message: msg, Type: v1.EventTypeWarning,
		Source:         v1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: metav1.NewTime(t0), LastTimestamp: metav1.NewTime(t0), Count: 1,
		ReportingController: "kubelet", ReportingInstance: "node-1",
	}
}

// correlateBench: the same events through client-go's correlator or
// herald's (the spam filter runs but never refuses, so that each path is
// what it says).
func correlateBench(b *testing.B, path string, herald bool) {
	b.ReportAllocs()
	var es []*v1.Event
	switch path {
	case "repeat": // the same event about 100 objects: a patch each
		for i := range 100 {
			es = append(es, event(fmt.Sprint("web-", i), "Back-off restarting failed container"))
		}
	case "new": // more objects than the caches hold: a create each
		for i := range 1 << 14 {
			es = append(es, event(fmt.Sprint("web-", i), "Back-off restarting failed container"))
		}
	default: // different messages about one object: combined, then patched
		for i := range 100 {
			es = append(es, event("web-0", fmt.Sprint("pulling image version ", i)))
		}
	}
	opts := record.CorrelatorOptions{Clock: testclock.NewFakeClock(t0), BurstSize: 1 << 30}
	var correlate func(*v1.Event) error
	if herald {
		c := k8sadapter.NewEventCorrelatorWithOptions(opts)
		correlate = func(e *v1.Event) error { _, err := c.EventCorrelate(e); return err }
	} else {
		c := record.NewEventCorrelatorWithOptions(opts)
		correlate = func(e *v1.Event) error { _, err := c.EventCorrelate(e); return err }
	}
	b.ResetTimer()
	for i := range b.N {
		if err := correlate(es[i%len(es)]); err != nil {
			b.Fatal(err)
		}
	}
}

// chart draws fan-out time per value against watchers, both axes
// logarithmic, with setup (GOMAXPROCS, benchtime, platform) under the
// title.
func chart(results []result, setup string) string {
	const w, h, left, bottom, top, right = 640, 420, 90, 50, 60, 160
	series, lo, hi := fanOutSeries(results)
	px := func(x float64) float64 { return left + math.Log10(x)/2*float64(w-left-right) }
	py := func(y float64) float64 {
		return float64(h-bottom) - (math.Log10(y)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*float64(h-bottom-top)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&sb, `<rect width="100%%" height="100%%" fill="white"/><text x="%d" y="22" font-size="15">Lossless fan-out: time per value until every watcher has it</text>`+"\n", left)
	fmt.Fprintf(&sb, `<text x="%d" y="42" fill="#555">%s; one publisher</text>`+"\n", left, setup)
	for _, x := range []float64{1, 10, 100} {
		fmt.Fprintf(&sb, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" text-anchor="middle">%g</text>`+"\n",
			px(x), top, px(x), h-bottom, px(x), h-bottom+18, x)
	}
	for y := lo; y <= hi*1.01; y *= 10 {
		fmt.Fprintf(&sb, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
			left, py(y), w-right, py(y), left-6, py(y)+4, (time.Duration(y) * time.Nanosecond).String())
	}
	fmt.Fprintf(&sb, `<text x="%d" y="%d" text-anchor="middle">watchers (log scale)</text>`+"\n", (w-right+left)/2, h-12)
	fmt.Fprintf(&sb, `<text transform="translate(18 %d) rotate(-90)" text-anchor="middle">time per value (log scale)</text>`+"\n", (h-bottom+top)/2)
	for i, s := range series {
		var pts []string
		for _, p := range s.pts {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.x), py(p.y)))
			fmt.Fprintf(&sb, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(p.x), py(p.y), s.color)
		}
		fmt.Fprintf(&sb, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", s.color, strings.Join(pts, " "))
		fmt.Fprintf(&sb, `<rect x="%d" y="%d" width="12" height="3" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			w-right+16, top+20*i+6, s.color, w-right+34, top+20*i+11, s.name)
	}
	sb.WriteString("</svg>\n")
	return sb.String()
}

// chartSeries is one line of the chart: an implementation, its colour, and
// its time per value (y, in ns) at each watcher count (x).
type chartSeries struct {
	name, color string
	pts         []chartPoint
}

// chartPoint is one measurement on the chart.
type chartPoint struct{ x, y float64 }

// fanOutSeries takes the fan-out results (those with watchers) as three
// series, apimachinery, herald read via Events and herald read via All, and
// returns them with the powers of ten below and above every time.
func fanOutSeries(results []result) (series []chartSeries, lo, hi float64) {
	series = []chartSeries{{name: "apimachinery", color: "#c0392b"}, {name: "herald (Events)", color: "#7f8c8d"}, {name: "herald (All)", color: "#2471a3"}}
	lo, hi = math.Inf(1), 0.0
	for _, r := range results {
		if r.watchers == 0 {
			continue
		}
		ys := []float64{float64(r.anchor.NsPerOp()), float64(r.heraldAlt.NsPerOp()), float64(r.herald.NsPerOp())}
		for i, y := range ys {
			y = math.Max(y, 1)
			series[i].pts = append(series[i].pts, chartPoint{float64(r.watchers), y})
			lo, hi = math.Min(lo, y), math.Max(hi, y)
		}
	}
	return series, math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
}
