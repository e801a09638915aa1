package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/telemetry/natstelemetry"
)

// The third part of the story: a trace across two processes, and the
// metrics of each. The orders service places a few orders, each published
// inside an "order.placed" span; Publish writes the span's context into
// the message's headers. A fulfilment process (this program again) reads
// them and handles each in an "order.handled" span started from
// Watcher.Context, which gives back that context: the two spans are in one
// trace, the second a child of the first. Each process registers its
// Publisher or Watcher with the telemetry module, and reads its metrics
// from a manual reader. Everything stays in memory: no collector.

// tracedOrders is how many orders the third part places.
const tracedOrders = 3

// consumerEnv carries the fulfilment process's description to the
// process that plays it.
const consumerEnv = "HERALD_NATS_EXAMPLE_CONSUMER"

// orderKey is the span attribute naming the order a span is about.
const orderKey = attribute.Key("order.id")

// The instruments each process prints, in that order.
var (
	publisherInstruments = []string{"messaging.client.sent.messages", "herald.nats.publisher.settled", "herald.nats.publisher.pending"}
	watcherInstruments   = []string{"messaging.client.consumed.messages", "herald.nats.watcher.dropped", "herald.nats.watcher.queue.depth"}
)

// consumerSpec describes the fulfilment process.
type consumerSpec struct {
	Server string `json:"server"`
	Creds  string `json:"creds"`
	Topic  string `json:"topic"`
	Orders int    `json:"orders"` // how many values it handles before it reports
}

// spanIDs is what the table shows of one span.
type spanIDs struct {
	Order  string `json:"order"`
	Trace  string `json:"trace"`
	Span   string `json:"span"`
	Parent string `json:"parent"` // the parent span's id; "-" for a root span
}

// point is one data point of an instrument, its attributes written out
// without those every point of the example carries (see showAttrs).
type point struct {
	Name  string `json:"name"`
	Attrs string `json:"attrs"`
	Value int64  `json:"value"`
}

// consumerReport is what the fulfilment process prints when it is done.
type consumerReport struct {
	Spans   []spanIDs `json:"spans"`
	Metrics []point   `json:"metrics"`
}

// traces runs the third part on topic: new orders go out as events
// first, first+1…, and the tables show both processes' spans and metrics.
func traces(ctx context.Context, out io.Writer, topic *natsbridge.Topic[Event], spec consumerSpec, first int) error {
	// What an application does once at start: W3C trace context in
	// messages' headers, where natsbridge writes and reads it.
	otel.SetTextMapPropagator(propagation.TraceContext{})
	obs := newObservability()
	defer obs.shutdown(context.Background())

	spec.Orders = tracedOrders
	c, err := startConsumer(ctx, spec)
	if err != nil {
		return err
	}
	defer c.kill()
	metrics, err := placeOrders(ctx, obs, topic, first)
	if err != nil {
		return err
	}
	rep, err := c.finish()
	if err != nil {
		return fmt.Errorf("fulfilment: %w", err)
	}
	if err := spansReport(out, obs.spans(), rep.Spans); err != nil {
		return err
	}
	return metricsReport(out, topic.Name(), map[string][]point{"orders": metrics, "fulfilment": rep.Metrics})
}

// placeOrders publishes tracedOrders new orders as events first,
// first+1…, each inside its own order.placed span, with a Publisher registered with obs's
// meter. Once the stream has confirmed them, it returns the publisher's
// metrics.
func placeOrders(ctx context.Context, obs *observability, topic *natsbridge.Topic[Event], first int) ([]point, error) {
	pub, err := topic.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		return nil, err
	}
	defer pub.Shutdown(ctx)
	reg, err := natstelemetry.Publisher(obs.meters.Meter("orders"), "orders", topic, pub)
	if err != nil {
		return nil, err
	}
	defer reg.Unregister()
	tracer := obs.tracers.Tracer("orders")
	order := (first+1)/3 + 1 // the one after newEvent(first-1)'s
	for i := range tracedOrders {
		e := Event{N: first + i, Order: fmt.Sprintf("o-%04d", order+i), Kind: "created", Cents: 100 * (i + 1)}
		sctx, span := tracer.Start(ctx, "order.placed",
			trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(orderKey.String(e.Order)))
		err := pub.Publish(sctx, e) // the message carries span's context
		span.End()
		if err != nil {
			return nil, err
		}
	}
	if err := pub.Shutdown(ctx); err != nil { // waits for the stream's acks
		return nil, err
	}
	return obs.collect(ctx, publisherInstruments...)
}

// spansReport prints a line per order: the trace of each process's span,
// the id of the publisher's span and the parent of the worker's.
func spansReport(out io.Writer, placed, handled []spanIDs) error {
	fmt.Fprintf(out, "\nA trace across two processes: orders placed %d orders, each published inside an order.placed span;\n"+
		"fulfilment, another process, handled each in an order.handled span started from Watcher.Context:\n\n", tracedOrders)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "order\ttrace (orders)\ttrace (fulfilment)\torder.placed span\tparent of order.handled")
	linked := len(placed) == len(handled)
	for _, p := range placed {
		h := spanIDs{Trace: "-", Parent: "-"}
		if i := slices.IndexFunc(handled, func(h spanIDs) bool { return h.Order == p.Order }); i >= 0 {
			h = handled[i]
		}
		linked = linked && h.Trace == p.Trace && h.Parent == p.Span
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Order, p.Trace, h.Trace, p.Span, h.Parent)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if linked {
		fmt.Fprintln(out, "\nEach order.handled span is in its order's trace, a child of its order.placed span: the trace\n"+
			"context crossed in the message's headers (W3C traceparent).")
	} else {
		fmt.Fprintln(out, "\nNOT every order.handled span is a child of its order.placed span: see the table.")
	}
	return nil
}

// metricsReport prints each process's points, the orders process first.
func metricsReport(out io.Writer, topic string, byProcess map[string][]point) error {
	fmt.Fprintf(out, "\nThe metrics of each process, read from its own manual reader (every point also carries\n"+
		"messaging.system=nats and messaging.destination.name=%s):\n\n", topic)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "process\tinstrument\tvalue\tattributes")
	for _, proc := range []string{"orders", "fulfilment"} {
		for _, p := range byProcess[proc] {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", proc, p.Name, p.Value, p.Attrs)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out, "\nEach process counts its own side: sent and settled (no error.type: confirmed by the stream)\n"+
		"where it publishes, consumed, dropped and queued where it reads.")
	return nil
}

// observability is one process's OpenTelemetry SDK, in memory: a tracer
// provider that records ended spans, a meter provider read on demand.
type observability struct {
	recorded *tracetest.InMemoryExporter
	tracers  *sdktrace.TracerProvider
	reader   *sdkmetric.ManualReader
	meters   *sdkmetric.MeterProvider
}

// newObservability returns providers that start no goroutine: spans are
// exported as they end (WithSyncer), metrics collected when asked.
func newObservability() *observability {
	o := &observability{recorded: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	o.tracers = sdktrace.NewTracerProvider(sdktrace.WithSyncer(o.recorded))
	o.meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(o.reader))
	return o
}

// shutdown shuts both providers down.
func (o *observability) shutdown(ctx context.Context) error {
	return errors.Join(o.tracers.Shutdown(ctx), o.meters.Shutdown(ctx))
}

// spans returns the ended spans, in the order they ended.
func (o *observability) spans() []spanIDs {
	var ids []spanIDs
	for _, s := range o.recorded.GetSpans() {
		id := spanIDs{Trace: s.SpanContext.TraceID().String(), Span: s.SpanContext.SpanID().String(), Parent: "-"}
		if s.Parent.IsValid() {
			id.Parent = s.Parent.SpanID().String()
		}
		for _, kv := range s.Attributes {
			if kv.Key == orderKey {
				id.Order = kv.Value.AsString()
			}
		}
		ids = append(ids, id)
	}
	return ids
}

// collect returns the points of the named int64 instruments, in the order
// named, each instrument's points sorted by attributes.
func (o *observability) collect(ctx context.Context, names ...string) ([]point, error) {
	var rm metricdata.ResourceMetrics
	if err := o.reader.Collect(ctx, &rm); err != nil {
		return nil, err
	}
	byName := map[string][]point{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			var dps []metricdata.DataPoint[int64]
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				dps = d.DataPoints
			case metricdata.Gauge[int64]:
				dps = d.DataPoints
			}
			for _, dp := range dps {
				byName[m.Name] = append(byName[m.Name], point{m.Name, showAttrs(dp.Attributes), dp.Value})
			}
		}
	}
	var pts []point
	for _, name := range names {
		ps := byName[name]
		slices.SortFunc(ps, func(a, b point) int { return strings.Compare(a.Attrs, b.Attrs) })
		pts = append(pts, ps...)
	}
	return pts, nil
}

// showAttrs writes out attrs without messaging.system and
// messaging.destination.name, which every point here carries alike, and
// "-" for none.
func showAttrs(attrs attribute.Set) string {
	var kvs []string
	for _, kv := range attrs.ToSlice() {
		if kv.Key != "messaging.system" && kv.Key != "messaging.destination.name" {
			kvs = append(kvs, string(kv.Key)+"="+kv.Value.String())
		}
	}
	if len(kvs) == 0 {
		return "-"
	}
	return strings.Join(kvs, " ")
}

// consumer is the running fulfilment process.
type consumer struct{ *child }

// startConsumer starts this program again as the fulfilment process s
// and waits until its watcher is registered.
func startConsumer(ctx context.Context, s consumerSpec) (*consumer, error) {
	c, ready, err := startChild(ctx, "fulfilment", consumerEnv, s)
	if err != nil {
		return nil, err
	}
	if ready != "ready" {
		c.kill()
		return nil, fmt.Errorf("fulfilment: %q", ready)
	}
	return &consumer{c}, nil
}

// finish waits for the process's report, once it has handled every
// order, and for the process to end.
func (c *consumer) finish() (consumerReport, error) {
	var rep consumerReport
	if !c.out.Scan() {
		return rep, errors.New("no report")
	}
	if err := json.Unmarshal(c.out.Bytes(), &rep); err != nil {
		return rep, err
	}
	return rep, c.cmd.Wait()
}

// consumerMain plays the fulfilment process described by spec: it
// watches the topic, says "ready", handles spec.Orders values each in its
// span, and reports its spans and metrics on out.
func consumerMain(spec string, out io.Writer) int {
	var s consumerSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, "fulfilment:", err)
		return 2
	}
	if err := runConsumer(s, out); err != nil {
		fmt.Fprintf(os.Stderr, "fulfilment: %v\n", err)
		return 1
	}
	return 0
}

// runConsumer watches the topic with a Watcher registered with its own
// meter, handles s.Orders values, and prints its report.
func runConsumer(s consumerSpec, out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	otel.SetTextMapPropagator(propagation.TraceContext{}) // as the orders process does
	obs := newObservability()
	defer obs.shutdown(context.Background())
	nc, js, err := dial(s.Server, s.Creds, "herald-example-fulfilment")
	if err != nil {
		return err
	}
	defer nc.Close()
	topic, err := natsbridge.NewTopic(ctx, js, s.Topic, natsbridge.JSON[Event](), natsbridge.TopicOptions{})
	if err != nil {
		return err
	}
	defer topic.Shutdown(ctx)
	w, err := topic.Watch(ctx, natsbridge.WatchOptions{}) // the values published from now on
	if err != nil {
		return err
	}
	defer w.Stop()
	reg, err := natstelemetry.Watcher(obs.meters.Meter("fulfilment"), "fulfilment", topic, w)
	if err != nil {
		return err
	}
	defer reg.Unregister()
	fmt.Fprintln(out, "ready")

	if err := handleOrders(ctx, obs.tracers.Tracer("fulfilment"), w, s.Orders); err != nil {
		return err
	}
	metrics, err := obs.collect(ctx, watcherInstruments...)
	if err != nil {
		return err
	}
	line, err := json.Marshal(consumerReport{Spans: obs.spans(), Metrics: metrics})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, string(line))
	return nil
}

// handleOrders reads n values from w and handles each inside an
// order.handled span, a child of the span that published it.
func handleOrders(ctx context.Context, tracer trace.Tracer, w *natsbridge.Watcher[Event], n int) error {
	for range n {
		e, err := w.Next(ctx)
		if err != nil {
			return err
		}
		// w.Context: ctx with the trace context of the value just read.
		_, span := tracer.Start(w.Context(ctx), "order.handled",
			trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(orderKey.String(e.Order)))
		// The service's work on the order goes here, under the span.
		span.End()
	}
	return nil
}
