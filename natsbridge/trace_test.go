package natsbridge_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// These tests set OpenTelemetry's global propagator: none of them is
// parallel, so that no other test runs meanwhile.

// tracing sets W3C trace context (propagation.TraceContext) as the global
// propagator until t ends, and returns a tracer whose ended spans the
// recorder keeps. The provider starts no goroutine (its span processor is
// the synchronous recorder); it is shut down when t ends.
func tracing(t testing.TB) (trace.Tracer, *tracetest.SpanRecorder) {
	setPropagator(t, propagation.TraceContext{})
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp.Tracer("natsbridge_test"), rec
}

// setPropagator sets p as the global propagator until t ends. The default
// global propagator is a no-op that delegates, for good, to the first one
// ever set: the one put back in its place is a fresh no-op, so that the
// tests after this one run with no propagator, as with the default.
func setPropagator(t testing.TB, p propagation.TextMapPropagator) {
	prev := otel.GetTextMapPropagator()
	if len(prev.Fields()) == 0 {
		prev = propagation.NewCompositeTextMapPropagator()
	}
	otel.SetTextMapPropagator(p)
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })
}

// publishTraced publishes orders first..last, each under a span of its
// own, waits for every ack, and returns each order's span context by ID.
func publishTraced(t testing.TB, topic *natsbridge.Topic[Order], tracer trace.Tracer, first, last int) map[int]trace.SpanContext {
	t.Helper()
	ctx := testCtx(t)
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	spans := map[int]trace.SpanContext{}
	for i := first; i <= last; i++ {
		sctx, span := tracer.Start(ctx, "publish")
		if err := p.Publish(sctx, Order{ID: i}); err != nil {
			t.Fatal(err)
		}
		span.End()
		spans[i] = span.SpanContext()
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	return spans
}

// checkContext fails t unless w.Context(parent) holds want, the span
// context of the Publish call that sent the value last read, as a remote
// one; or, for an invalid want, unless it returns parent itself.
func checkContext(t testing.TB, w *natsbridge.Watcher[Order], parent context.Context, id int, want trace.SpanContext) {
	t.Helper()
	ctx := w.Context(parent)
	if !want.IsValid() {
		if ctx != parent {
			t.Errorf("value %d: Context(parent) returned another context (span context %v), want parent itself", id, trace.SpanContextFromContext(ctx))
		}
		return
	}
	got := trace.SpanContextFromContext(ctx)
	if got.TraceID() != want.TraceID() || got.SpanID() != want.SpanID() || !got.IsRemote() || !got.IsSampled() {
		t.Errorf("value %d: Context(parent) holds trace %s span %s (remote %v, sampled %v), want trace %s span %s, remote, sampled",
			id, got.TraceID(), got.SpanID(), got.IsRemote(), got.IsSampled(), want.TraceID(), want.SpanID())
	}
}

// TestTraceContext: a value published under a span carries the span's
// context to the watcher: Context, after reading it with Next, All or
// Events, holds that span context, as a remote one. A prefix value and a
// value published with no span in its ctx give the parent back as it is.
func TestTraceContext(t *testing.T) {
	const n = 5
	for _, mode := range []string{"Next", "All", "Events"} {
		t.Run(mode, func(t *testing.T) {
			tracer, rec := tracing(t)
			s := startServer(t, embedded.Options{})
			_, js := connect(t, s)
			topic := newTopic(t, js, "trace.orders", natsbridge.TopicOptions{})
			w := watch(t, topic, natsbridge.WatchOptions{}, Order{ID: 0})
			want := publishTraced(t, topic, tracer, 1, n)
			publishAll(t, topic, n+1, n+1) // no span in its ctx
			if got := len(rec.Ended()); got != n {
				t.Fatalf("the recorder holds %d spans, want %d", got, n)
			}
			ctx := testCtx(t)
			switch mode {
			case "Next":
				for range n + 2 {
					o, err := w.Next(ctx)
					if err != nil {
						t.Fatal(err)
					}
					checkContext(t, w, ctx, o.ID, want[o.ID])
				}
			case "All":
				for o := range w.All() {
					checkContext(t, w, ctx, o.ID, want[o.ID])
					if o.ID == n+1 {
						break
					}
				}
			case "Events":
				// The channel's pump records a value just after the
				// receive: Seq says when (the prefix value has none).
				for o := range w.Events() {
					eventually(t, "Seq records the value", func() bool { return w.Seq() == uint64(o.ID) })
					if o.ID > 0 {
						checkContext(t, w, ctx, o.ID, want[o.ID])
					}
					if o.ID == n+1 {
						break
					}
				}
			}
		})
	}
}

// TestTraceDurableRedelivered: values that come again to a durable
// watcher's next reader, after the reader they were delivered to lost its
// connection without acknowledging them, carry the trace context of the
// Publish call that sent them.
func TestTraceDurableRedelivered(t *testing.T) {
	tracer, _ := tracing(t)
	s := startServer(t, embedded.Options{})
	nc1, js1 := connect(t, s)
	_, js2 := connect(t, s)
	first := newTopic(t, js1, "trace.durable", natsbridge.TopicOptions{})
	second := newTopic(t, js2, "trace.durable", natsbridge.TopicOptions{})
	opts := natsbridge.WatchOptions{Durable: "billing", Takeover: 2 * time.Second}
	active := watch(t, first, opts)
	const n = 50
	want := publishTraced(t, second, tracer, 1, n)
	ctx := testCtx(t)
	o, err := active.Next(ctx) // active: it has the turn
	if err != nil {
		t.Fatal(err)
	}
	checkContext(t, active, ctx, o.ID, want[o.ID])
	standby := watch(t, second, opts)
	cons, err := js2.Consumer(ctx, first.Stream(), "billing")
	if err != nil {
		t.Fatal(err)
	}
	// Every value went to the active reader (read ahead), and at most
	// the one it read is acknowledged.
	eventually(t, "every value delivered to the active reader", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.Delivered.Stream == n
	})
	rec := durableRecord(t, js2, "trace.durable", "billing")
	nc1.Close() // the active reader is gone, its values unacknowledged
	read := 0
	for read == 0 || o.ID != n {
		if o, err = standby.Next(ctx); err != nil {
			t.Fatalf("standby Next after %d values: %v", read, err)
		}
		read++
		checkContext(t, standby, ctx, o.ID, want[o.ID])
	}
	if read < n-1 {
		t.Fatalf("the standby read %d values, want at least %d: those the active reader did not acknowledge", read, n-1)
	}
	// The active reader handed out value 1 and had reserved up to
	// rec.Handed: Redelivered counts 1, and at most that reservation.
	if got := standby.Stats().Redelivered; got < 1 || got > rec.Handed {
		t.Errorf("the standby read %d values, one of them handed out before (its reader reserved up to %d); Redelivered() = %d, want 1..%d", read, rec.Handed, got, rec.Handed)
	}
}

// TestTraceResentSameHeaders: values sent again (their acks lost with the
// connection) carry the same trace context as their first send: each
// stored message holds the traceparent of its own Publish call.
func TestTraceResentSameHeaders(t *testing.T) {
	tracer, _ := tracing(t)
	s := startServer(t, embedded.Options{Listen: "127.0.0.1:0"})
	nc, js := dial(t, slowLink(t, strings.TrimPrefix(s.URL(), "nats://"), 20*time.Millisecond))
	topic := newTopic(t, js, "trace.resent", natsbridge.TopicOptions{})
	const n = 200
	p := publisher(t, topic, natsbridge.PublisherOptions{Window: n})
	ctx := testCtx(t)
	want := map[int]trace.SpanContext{}
	for i := 1; i <= n; i++ {
		sctx, span := tracer.Start(ctx, "publish")
		if err := p.Publish(sctx, Order{ID: i}); err != nil {
			t.Fatal(err)
		}
		span.End()
		want[i] = span.SpanContext()
	}
	if err := nc.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	if st.Retries == 0 || st.Confirmed != n {
		t.Fatalf("Stats() = %s, retries %d; want values sent again, and all %d confirmed", describe(st), st.Retries, n)
	}
	_, direct := connect(t, s)
	for _, m := range rawMessages(t, direct, topic, n) {
		o, err := natsbridge.JSON[Order]().Unmarshal(m.Data())
		if err != nil {
			t.Fatal(err)
		}
		if got, w := m.Headers().Get("traceparent"), traceparent(want[o.ID]); got != w {
			t.Errorf("value %d: traceparent %q, want %q", o.ID, got, w)
		}
	}
	t.Logf("%d values, %d sent again", n, st.Retries)
}

// TestCrossProcessTrace: a publisher in one process publishes each value
// under a span of its own; a watcher in another reads them, each with the
// trace ID of its publisher's span (both processes use W3C trace context,
// over loopback TCP to a server in this one).
func TestCrossProcessTrace(t *testing.T) {
	s := startServer(t, embedded.Options{Listen: "127.0.0.1:0"})
	_, js := connect(t, s)
	const name, n = "crossproc.traced", 20
	newTopic(t, js, name, natsbridge.TopicOptions{})
	ctx := testCtx(t)
	env := []string{topicEnv + "=" + name, traceEnv + "=1"}
	w := startHelper(t, ctx, "watcher", s.URL(), "w", n, env...)
	if line := w.line(t); line != "ready" {
		t.Fatalf("watcher said %q, want ready", line)
	}
	p := startHelper(t, ctx, "publisher", s.URL(), "A", n, env...)
	published, read := p.report(t), w.report(t)
	if len(published.Traces) != n || len(slices.Compact(slices.Sorted(slices.Values(published.Traces)))) != n {
		t.Fatalf("the publisher reports %d trace IDs (%v), want %d distinct", len(published.Traces), published.Traces, n)
	}
	if diff := cmp.Diff(published.Traces, read.Traces); diff != "" {
		t.Fatalf("trace IDs (-published +read):\n%s", diff)
	}
	if diff := cmp.Diff(span(1, n), ids(read.Orders)); diff != "" {
		t.Fatalf("values read (-want +got):\n%s", diff)
	}
}

// traceparent is the W3C traceparent header of sc.
func traceparent(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

// rawMessages reads the first n messages of the topic's stream with a plain
// jetstream consumer.
func rawMessages(t testing.TB, js jetstream.JetStream, topic *natsbridge.Topic[Order], n int) []jetstream.Msg {
	t.Helper()
	ctx := testCtx(t)
	c, err := js.OrderedConsumer(ctx, topic.Stream(), jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var out []jetstream.Msg
	for len(out) < n {
		batch, err := c.Fetch(n-len(out), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			out = append(out, m)
		}
		if err := batch.Error(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestTraceNoPropagator: with no propagator set (OpenTelemetry's default),
// a value published under a span carries no header but natsbridge's own,
// and Context gives the parent back as it is. With W3C trace context set,
// the message carries a "traceparent" header, in lower case, as other
// clients write it.
func TestTraceNoPropagator(t *testing.T) {
	tracer, _ := tracing(t)
	setPropagator(t, propagation.NewCompositeTextMapPropagator()) // none, as by default
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "trace.none", natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{})
	publishTraced(t, topic, tracer, 1, 1)
	setPropagator(t, propagation.TraceContext{})
	want := publishTraced(t, topic, tracer, 2, 2)
	msgs := rawMessages(t, js, topic, 2)
	own := []string{jetstream.MsgIDHeader, jetstream.ExpectedStreamHeader}
	if got := headerNames(msgs[0].Headers()); !equalSet(got, own) {
		t.Errorf("with no propagator the message carries headers %q, want only %q", got, own)
	}
	if got := headerNames(msgs[1].Headers()); !equalSet(got, append(own, "traceparent")) {
		t.Errorf("with TraceContext the message carries headers %q, want %q and traceparent", got, own)
	}
	if got := msgs[1].Headers().Get("traceparent"); got != traceparent(want[2]) {
		t.Errorf("traceparent %q, want %q", got, traceparent(want[2]))
	}
	ctx := testCtx(t)
	for _, sc := range []trace.SpanContext{{}, want[2]} {
		o, err := w.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		checkContext(t, w, ctx, o.ID, sc)
	}
}

func headerNames(h nats.Header) []string {
	var out []string
	for k := range h {
		out = append(out, k)
	}
	return out
}

func equalSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	in := map[string]bool{}
	for _, s := range a {
		in[s] = true
	}
	for _, s := range b {
		if !in[s] {
			return false
		}
	}
	return true
}

// TestTraceTooLarge: a value that fits in a message only without its trace
// context is published without it (and logged), not refused: the limit of
// ErrTooLarge does not depend on tracing. A value that fits with it keeps
// it.
func TestTraceTooLarge(t *testing.T) {
	tracer, _ := tracing(t)
	const maxPayload = 2048
	s := startServer(t, embedded.Options{MaxPayload: maxPayload})
	_, js := connect(t, s)
	var logs logRecorder
	topic := newTopicOf(t, js, "trace.large", natsbridge.Codec[[]byte](bytesCodec{}), natsbridge.TopicOptions{Logger: logs.Logger()})
	limit := maxPayload - 94 - len(topic.Stream())
	room := len("traceparent: ") + len("00-") + 32 + 1 + 16 + 1 + 2 + len("\r\n")
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	ctx, span := tracer.Start(testCtx(t), "publish")
	defer span.End()
	for _, size := range []int{limit - room, limit - room + 1, limit} {
		if err := p.Publish(ctx, make([]byte, size)); err != nil {
			t.Fatalf("Publish(%d bytes) = %v, want nil", size, err)
		}
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got := logs.reported("natsbridge: value sent without its trace context, which does not fit in the message"); got != 2 {
		t.Errorf("%d values logged as sent without their trace context, want 2\n%s", got, logs.String())
	}
	w := watchTopic(t, topic, natsbridge.WatchOptions{From: 1})
	for i, traced := range []bool{true, false, false} {
		v, err := w.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := trace.SpanContextFromContext(w.Context(context.Background())).IsValid()
		if got != traced {
			t.Errorf("value %d (%d bytes): trace context %v, want %v", i, len(v), got, traced)
		}
	}
}

// TestContextPrefixValue: Context after reading a prefix value
// returns parent itself, also after a traced value was read, on both
// read modes.
func TestContextPrefixValue(t *testing.T) {
	tracer, _ := tracing(t)
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "h2prefix", natsbridge.TopicOptions{})
	spans := publishTraced(t, topic, tracer, 1, 2)
	parent := context.Background()
	// A queue watcher: on a channel watcher Context is that of the last
	// value placed on the channel, not read.
	for _, events := range []bool{false} {
		w := watch(t, topic, natsbridge.WatchOptions{From: 1}, Order{ID: -1}, Order{ID: -2})
		next := func() Order { return take(t, w, 1)[0] }
		if ctx := w.Context(parent); ctx != parent {
			t.Errorf("events=%v: Context before any read is not parent", events)
		}
		for _, want := range []int{-1, -2, 1, 2} {
			v := next()
			if v.ID != want {
				t.Fatalf("events=%v: read %d, want %d", events, v.ID, want)
			}
			checkContext(t, w, parent, v.ID, spans[v.ID])
		}
		w.Stop()
	}
}

// TestContextConcurrentWithReads: Context and Seq called while a
// channel watcher is read (run under -race): once Seq gives a value's
// sequence, Context gives that value's trace context or a later one's.
func TestContextConcurrentWithReads(t *testing.T) {
	tracer, _ := tracing(t)
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "h2ctxrace", natsbridge.TopicOptions{})
	const n = 300
	spans := publishTraced(t, topic, tracer, 1, n)
	byID := map[trace.SpanID]int{}
	for id, sc := range spans {
		byID[sc.SpanID()] = id
	}
	for _, events := range []bool{true, false} {
		w := watch(t, topic, natsbridge.WatchOptions{From: 1, QueueLength: 4})
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var bad []string
		var mu sync.Mutex
		for range 2 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					seq := w.Seq()
					sc := trace.SpanContextFromContext(w.Context(context.Background()))
					if seq == 0 {
						continue
					}
					id, ok := byID[sc.SpanID()]
					if !ok || uint64(id) < seq {
						mu.Lock()
						bad = append(bad, "seq "+strconv.Itoa(int(seq))+" context of "+strconv.Itoa(id))
						mu.Unlock()
					}
				}
			})
		}
		read := 0
		if events {
			for range n {
				<-w.Events()
				read++
			}
		} else {
			for range w.All() {
				read++
				if read == n {
					break
				}
			}
		}
		close(stop)
		wg.Wait()
		w.Stop()
		if len(bad) > 0 {
			t.Errorf("events=%v: %d mismatches, first: %v", events, len(bad), bad[:min(5, len(bad))])
		}
	}
}
