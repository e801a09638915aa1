package natsbridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// The environment of a test binary started as a helper process.
const (
	roleEnv  = "HERALD_NATSBRIDGE_ROLE" // "publisher" or "watcher"
	urlEnv   = "HERALD_NATSBRIDGE_URL"
	nameEnv  = "HERALD_NATSBRIDGE_NAME"  // a publisher's name, stored in Order.Item
	countEnv = "HERALD_NATSBRIDGE_COUNT" // values to publish, or to read
	topicEnv = "HERALD_NATSBRIDGE_TOPIC" // the topic, if not crossTopic
	paceEnv  = "HERALD_NATSBRIDGE_PACE"  // a durable reader's time per value, as a duration
	traceEnv = "HERALD_NATSBRIDGE_TRACE" // "1": W3C trace context; a publisher publishes each value under a span of its own
)

const crossTopic = "crossproc.orders"

// report is what a helper process prints as its last line.
type report struct {
	Start       uint64                    `json:"start,omitempty"`
	Redelivered uint64                    `json:"redelivered,omitempty"`
	Seqs        []uint64                  `json:"seqs,omitempty"`
	Orders      []Order                   `json:"orders,omitempty"`
	Traces      []string                  `json:"traces,omitempty"` // with traceEnv: the trace ID of each value published, or read
	Gaps        uint64                    `json:"gaps"`
	Dropped     uint64                    `json:"dropped"`
	Publisher   natsbridge.PublisherStats `json:"publisher"`
}

// TestCrossProcess runs two publishers and two watchers in four processes of
// this test binary, connected over loopback TCP to a server in this one. Both
// watchers read the same values in the same order, each publisher's values
// in its order, with no gap and no drop; each publisher's values are all
// confirmed.
func TestCrossProcess(t *testing.T) {
	s := startServer(t, embedded.Options{Listen: "127.0.0.1:0"})
	_, js := connect(t, s)
	newTopic(t, js, crossTopic, natsbridge.TopicOptions{})
	const each = 500
	ctx := testCtx(t)

	var watchers []*helper
	for i := range 2 {
		h := startHelper(t, ctx, "watcher", s.URL(), fmt.Sprintf("w%d", i), 2*each)
		if line := h.line(t); line != "ready" {
			t.Fatalf("watcher %d said %q, want ready", i, line)
		}
		watchers = append(watchers, h)
	}
	var pubs []*helper
	for _, name := range []string{"A", "B"} {
		pubs = append(pubs, startHelper(t, ctx, "publisher", s.URL(), name, each))
	}
	for _, h := range pubs {
		if st := h.report(t).Publisher; st.Published != each || st.Confirmed != each {
			t.Errorf("publisher Stats(): %s; want all %d confirmed", describe(st), each)
		}
	}
	var reads []report
	for _, h := range watchers {
		reads = append(reads, h.report(t))
	}
	for i, r := range reads {
		if len(r.Orders) != 2*each || r.Gaps != 0 || r.Dropped != 0 {
			t.Fatalf("watcher %d read %d values, %d gaps, %d dropped; want %d, 0, 0", i, len(r.Orders), r.Gaps, r.Dropped, 2*each)
		}
		for j, seq := range r.Seqs {
			if seq != r.Start+uint64(j) {
				t.Fatalf("watcher %d: value %d has sequence %d, want %d", i, j, seq, r.Start+uint64(j))
			}
		}
		next := map[string]int{"A": 1, "B": 1}
		for _, o := range r.Orders {
			if o.ID != next[o.Item] {
				t.Fatalf("watcher %d: publisher %s's value %d arrived when %d was due", i, o.Item, o.ID, next[o.Item])
			}
			next[o.Item]++
		}
	}
	if diff := cmp.Diff(reads[0].Orders, reads[1].Orders); diff != "" {
		t.Fatalf("the watchers read different orders (-w0 +w1):\n%s", diff)
	}
}

// helper is a test binary started in a role.
type helper struct {
	cmd  *exec.Cmd
	role string
	out  *bufio.Scanner
	in   io.WriteCloser // closing it asks a durable helper to stop
}

func startHelper(t *testing.T, ctx context.Context, role, url, name string, count int, env ...string) *helper {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		roleEnv+"="+role, urlEnv+"="+url, nameEnv+"="+name, countEnv+"="+strconv.Itoa(count))
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, role: role + " " + name, out: bufio.NewScanner(stdout), in: stdin}
	h.out.Buffer(nil, 16<<20)
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return h
}

// line returns the helper's next line of output.
func (h *helper) line(t *testing.T) string {
	t.Helper()
	if !h.out.Scan() {
		t.Fatalf("%s ended without a line: %v", h.role, h.out.Err())
	}
	return h.out.Text()
}

// report waits for the helper to exit and returns its report.
func (h *helper) report(t *testing.T) report {
	t.Helper()
	var r report
	if err := json.Unmarshal([]byte(h.line(t)), &r); err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("%s: %v", h.role, err)
	}
	return r
}

// errPrinted tells playRole that a role printed its report itself.
var errPrinted = errors.New("printed")

// runRole is main for a helper process. It returns the exit code.
func runRole(role string) int {
	if err := playRole(role); err != nil {
		fmt.Fprintln(os.Stderr, role+":", err)
		return 1
	}
	return 0
}

func playRole(role string) error {
	count, err := strconv.Atoi(os.Getenv(countEnv))
	if err != nil {
		return err
	}
	nc, err := nats.Connect(os.Getenv(urlEnv), nats.Name("herald-"+role))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if role == "member" { // a partitioned topic's
		_, err := playMember(ctx, js)
		if errors.Is(err, errPrinted) {
			return nil
		}
		return err
	}
	name := crossTopic
	if n := os.Getenv(topicEnv); n != "" {
		name = n
	}
	topic, err := natsbridge.NewTopic(ctx, js, name, natsbridge.JSON[Order](), natsbridge.TopicOptions{})
	if err != nil {
		return err
	}
	defer topic.Shutdown(ctx)
	traced := os.Getenv(traceEnv) == "1"
	if traced {
		otel.SetTextMapPropagator(propagation.TraceContext{})
	}
	var r report
	switch role {
	case "publisher":
		p, err := topic.Publisher(natsbridge.PublisherOptions{})
		if err != nil {
			return err
		}
		name := os.Getenv(nameEnv)
		tp := sdktrace.NewTracerProvider()
		defer tp.Shutdown(context.Background())
		for i := 1; i <= count; i++ {
			pctx := ctx
			if traced {
				var span trace.Span
				pctx, span = tp.Tracer("publisher").Start(ctx, "publish")
				r.Traces = append(r.Traces, span.SpanContext().TraceID().String())
				span.End()
			}
			if err := p.Publish(pctx, Order{ID: i, Item: name}); err != nil {
				return err
			}
		}
		if err := p.Shutdown(ctx); err != nil {
			return err
		}
		r.Publisher = p.Stats()
	case "watcher":
		w, err := topic.Watch(ctx, natsbridge.WatchOptions{QueueLength: 64, Full: broadcast.Block})
		if err != nil {
			return err
		}
		fmt.Println("ready")
		r.Start = w.Start()
		for len(r.Orders) < count {
			o, err := w.Next(ctx)
			if err != nil {
				return err
			}
			r.Orders = append(r.Orders, o)
			r.Seqs = append(r.Seqs, w.Seq())
			if traced {
				r.Traces = append(r.Traces, trace.SpanContextFromContext(w.Context(ctx)).TraceID().String())
			}
		}
		w.Stop()
		r.Gaps, r.Dropped = w.Stats().Gaps, w.Stats().Dropped
	case "durable":
		if r, err = readDurable(ctx, topic); err != nil {
			return err
		}
	case "handler":
		if r, err = playHandler(ctx, topic); err != nil {
			return err
		}
	case "pool":
		if r, err = playPool(ctx, js, topic); err != nil {
			return err
		}

	case "chaos":
		if r, err = playChaos(ctx, js, topic); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	out, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}

// readDurable is the durable role: it watches the topic with the durable
// name the helper was given, says "ready", then prints "read <id> <seq>" for
// each value it reads until its standard input closes; then it stops the
// watcher and reports.
func readDurable(ctx context.Context, topic *natsbridge.Topic[Order]) (report, error) {
	var r report
	w, err := topic.Watch(ctx, natsbridge.WatchOptions{Durable: os.Getenv(nameEnv), Takeover: 2 * time.Second})
	if err != nil {
		return r, err
	}
	pace, _ := time.ParseDuration(os.Getenv(paceEnv))
	fmt.Println("ready")
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // until the test closes it
		cancel()
	}()
	for stop.Err() == nil {
		o, err := w.Next(stop) // it also says the value before is done
		if err != nil {
			break
		}
		r.Orders = append(r.Orders, o)
		fmt.Printf("read %d %d\n", o.ID, w.Seq())
		time.Sleep(pace) // the application's work on the value
	}
	// The loop ended with a value handled that no later Next call says is
	// done: say it.
	w.Done(w.Seq())
	w.Stop()
	r.Redelivered = w.Stats().Redelivered
	return r, nil
}
