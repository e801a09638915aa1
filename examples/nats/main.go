// Command nats shows herald across processes: typed domain events published
// to a NATS JetStream topic and read by processes that each keep a promise
// of their own.
//
//	cd examples/nats && go run .                           # an embedded server
//	cd examples/nats && go run . -server nats://host:4222  # an existing one
//
// It starts a NATS server with JetStream inside this process (listening on
// loopback only, storing in a temporary directory) and opens the topic as
// its owner, the orders service, which publishes order events. First,
// worker processes (this program again) watch the topic with the three
// policies and a late start: the table shows what each received, what its
// policy dropped and the gaps retention made. Then two services, billing
// and shipping, read the topic with two replicas each, sharing a durable
// position: midway billing's reading replica is killed (SIGKILL) and
// shipping's is stopped cleanly, the standbys take over, and the table
// shows every event handled at least once, the redeliveries counted,
// nothing lost. Then a trace across two processes, and the metrics of
// each: the orders service publishes a few orders, each inside a span of
// OpenTelemetry's, and a fulfilment process handles each in a span that
// is its child, the trace context carried in the message's headers; each
// process reads its Publisher's or Watcher's metrics through the
// telemetry module. Spans and metrics stay in memory: no collector.
// Last, replicas that share the work: a packing service of three
// replicas reads a topic of six partitions as a consumer group, one
// replica is killed mid-stream and a fourth joins; the table shows which
// partitions each read, what came again, and that each order's events
// were handled in order.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// Event is the domain event the example publishes: one step of an order.
type Event struct {
	N     int    `json:"n"` // 1, 2, 3… in publishing order
	Order string `json:"order"`
	Kind  string `json:"kind"` // created, paid, shipped
	Cents int    `json:"cents"`
}

// config is what main's flags set.
type config struct {
	server string // an existing server's URL; empty starts an embedded one
	creds  string // a credentials file for server
	events int    // events to publish
	retain int    // the stream keeps this many events; 0 keeps every one
	keep   bool   // keep the topic's stream on an existing server
}

func main() {
	if spec := os.Getenv(workerEnv); spec != "" {
		os.Exit(workerMain(spec, os.Stdin, os.Stdout))
	}
	if spec := os.Getenv(replicaEnv); spec != "" {
		os.Exit(replicaMain(spec, os.Stdin, os.Stdout))
	}
	if spec := os.Getenv(consumerEnv); spec != "" {
		os.Exit(consumerMain(spec, os.Stdout))
	}
	if spec := os.Getenv(memberEnv); spec != "" {
		os.Exit(memberMain(spec, os.Stdin, os.Stdout))
	}
	var c config
	flag.StringVar(&c.server, "server", "", "URL of an existing NATS server with JetStream (default: start one in this process)")
	flag.StringVar(&c.creds, "creds", "", "credentials file for -server")
	flag.IntVar(&c.events, "events", 1000, "events to publish")
	flag.IntVar(&c.retain, "retain", 600, "events the stream keeps, older ones removed (0: every event)")
	flag.BoolVar(&c.keep, "keep", false, "keep the example's stream on -server")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout, c); err != nil {
		fmt.Fprintln(os.Stderr, "nats:", err)
		os.Exit(1)
	}
}

// worker describes one watching process.
type worker struct {
	Name   string               `json:"name"`
	Policy broadcast.FullPolicy `json:"policy"`
	Queue  int                  `json:"queue"`
	From   uint64               `json:"from"`
	Read   bool                 `json:"read"` // reads as values come; otherwise only at the end
	Server string               `json:"server"`
	Creds  string               `json:"creds"`
	Topic  string               `json:"topic"`
	Retain int                  `json:"retain"`
}

// result is what a worker reports when it ends.
type result struct {
	Start    uint64 `json:"start"`
	Received int    `json:"received"`
	First    int    `json:"first"`
	Last     int    `json:"last"`
	InOrder  bool   `json:"inOrder"`
	Dropped  uint64 `json:"dropped"`
	Gaps     uint64 `json:"gaps"`
	Restarts uint64 `json:"restarts"`
}

// run runs the demo and writes its report to out.
func run(ctx context.Context, out io.Writer, c config) error {
	if err := c.check(); err != nil {
		return err
	}
	serverURL, stopServer, err := startServer(out, c)
	if err != nil {
		return err
	}
	defer stopServer()
	nc, js, err := dial(serverURL, c.creds, "herald-example-publisher")
	if err != nil {
		return err
	}
	defer nc.Close()
	// A topic of its own per run, so that runs against one server do not
	// mix.
	name := "herald.example.orders." + strings.ToLower(nuid.Next()[:8])
	topic, err := natsbridge.NewTopic(ctx, js, name, natsbridge.JSON[Event](), natsbridge.TopicOptions{MaxMsgs: int64(c.retain)})
	if err != nil {
		return err
	}
	defer topic.Shutdown(ctx)
	if c.server == "" || !c.keep {
		defer topic.Delete(context.Background())
	}
	if c.keepsAll() {
		fmt.Fprintf(out, "topic %s: the stream keeps every event\n\n", name)
	} else {
		fmt.Fprintf(out, "topic %s: the stream keeps the last %d events\n\n", name, c.retain)
	}

	base := worker{Server: serverURL, Creds: c.creds, Topic: name, Retain: c.retain}
	if err := workers(ctx, out, topic, base, c); err != nil {
		return err
	}
	last := c.events
	if c.events >= 2 { // fewer are too few to stop a replica midway
		last = 2 * c.events
		if err := services(ctx, out, topic, replicaSpec{Server: serverURL, Creds: c.creds, Topic: name}, c.events+1, last); err != nil {
			return err
		}
	}
	if err := traces(ctx, out, topic, consumerSpec{Server: serverURL, Creds: c.creds, Topic: name}, last+1); err != nil {
		return err
	}
	if c.events < 2 {
		return nil
	}
	return packing(ctx, out, js, memberSpec{Server: serverURL, Creds: c.creds, Topic: name + ".packing"}, c.events)
}

// check refuses a negative number of events or retention, naming the flag.
func (c config) check() error {
	if c.events < 0 {
		return fmt.Errorf("-events %d: must be 0 or more", c.events)
	}
	if c.retain < 0 {
		return fmt.Errorf("-retain %d: must be 0 (keep every event) or more", c.retain)
	}
	return nil
}

// keepsAll reports whether the stream keeps every event the demo
// publishes.
func (c config) keepsAll() bool { return c.retain == 0 || c.retain >= c.events }

// chunk returns how many events go out between the workers' catch-ups
// (see publishInChunks): what the stream keeps, or all of them.
func (c config) chunk() int {
	if c.keepsAll() {
		return max(c.events, 1)
	}
	return c.retain
}

// startServer returns the URL of the server to use, c.server or that of an
// embedded server it starts in a temporary directory, and a function that
// stops and removes what it started.
func startServer(out io.Writer, c config) (serverURL string, stop func(), err error) {
	if c.server != "" {
		fmt.Fprintf(out, "NATS server at %s\n", redact(c.server))
		return c.server, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "herald-nats-example")
	if err != nil {
		return "", nil, err
	}
	srv, err := embedded.Start(embedded.Options{Dir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	fmt.Fprintf(out, "embedded NATS server with JetStream at %s (loopback only)\n", srv.URL())
	return srv.URL(), func() {
		srv.Shutdown()
		os.RemoveAll(dir)
	}, nil
}

// workers runs the first part of the story: three worker processes watch
// the topic with the three policies while the orders service publishes,
// then a late one asks for everything from sequence 1, and the table shows
// what each received.
func workers(ctx context.Context, out io.Writer, topic *natsbridge.Topic[Event], base worker, c config) error {
	audit := worker{Name: "audit", Policy: broadcast.Block, Queue: 256, Read: true}
	dashboard := worker{Name: "dashboard", Policy: broadcast.DropOldest, Queue: 8}
	sampler := worker{Name: "sampler", Policy: broadcast.DropNewest, Queue: 8}
	var procs []*proc
	defer func() {
		for _, p := range procs {
			p.kill()
		}
	}()
	for _, w := range []worker{audit, dashboard, sampler} {
		p, err := startWorker(ctx, merge(base, w))
		if err != nil {
			return err
		}
		procs = append(procs, p)
	}

	total, err := publishInChunks(ctx, topic, c, procs)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "publisher: %d events published, %d confirmed by the stream (last sequence %d), %d failed, %d unconfirmed\n",
		total.Published, total.Confirmed, total.LastSeq, total.Failed, total.Unconfirmed)

	// A worker that comes late and asks for everything from sequence 1:
	// retention has removed the oldest events, and it counts them.
	late, err := startWorker(ctx, merge(base, worker{Name: "late", Policy: broadcast.Block, Queue: 64, From: 1, Read: true}))
	if err != nil {
		return err
	}
	procs = append(procs, late)

	if err := workersReport(out, procs); err != nil {
		return err
	}
	explainWorkers(out, c, dashboard, sampler)
	return nil
}

// publishInChunks publishes events 1..c.events in chunks no larger than
// what the stream keeps, and lets the workers catch up after each: a burst
// larger than the retention can outrun even a fast reader, which would
// then count gaps too. Each chunk has its publisher, whose Shutdown waits
// for every ack. It returns the publishers' stats added up.
func publishInChunks(ctx context.Context, topic *natsbridge.Topic[Event], c config, procs []*proc) (natsbridge.PublisherStats, error) {
	var total natsbridge.PublisherStats
	chunk := c.chunk()
	for first := 1; first <= c.events; first += chunk {
		pub, err := topic.Publisher(natsbridge.PublisherOptions{})
		if err != nil {
			return total, err
		}
		for n := first; n < first+chunk && n <= c.events; n++ {
			if err := pub.Publish(ctx, newEvent(n)); err != nil {
				return total, err
			}
		}
		if err := pub.Shutdown(ctx); err != nil {
			return total, err
		}
		st := pub.Stats()
		total.Published += st.Published
		total.Confirmed += st.Confirmed
		total.Failed += st.Failed
		total.Unconfirmed += st.Unconfirmed
		total.LastSeq = max(total.LastSeq, st.LastSeq)
		for _, p := range procs {
			if err := p.sync(); err != nil {
				return total, fmt.Errorf("worker %s: %w", p.w.Name, err)
			}
		}
	}
	return total, nil
}

// workersReport ends every worker and prints a line per worker with its
// result.
func workersReport(out io.Writer, procs []*proc) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(out, "\n")
	fmt.Fprintln(tw, "worker\tpolicy\tqueue\tstart\treceived\tevents\tin order\tdropped\tgaps")
	for _, p := range procs {
		r, err := p.finish()
		if err != nil {
			return fmt.Errorf("worker %s: %w", p.w.Name, err)
		}
		events := "-"
		if r.Received > 0 {
			events = fmt.Sprintf("%d..%d", r.First, r.Last)
		}
		fmt.Fprintf(tw, "%s\t%v\t%d\t%d\t%d\t%s\t%v\t%d\t%d\n",
			p.w.Name, p.w.Policy, p.w.Queue, r.Start, r.Received, events, yes(r.InOrder), r.Dropped, r.Gaps)
	}
	return tw.Flush()
}

// explainWorkers says what the workers' table shows: what the policies
// dropped, if the queues overflowed, and what retention removed before the
// late worker started.
func explainWorkers(out io.Writer, c config, dashboard, sampler worker) {
	if c.events > dashboard.Queue {
		fmt.Fprintf(out, "\nEvery worker read one order (the stream's). audit lost nothing (Block); dashboard kept the\n"+
			"freshest %d (DropOldest) and sampler the first %d (DropNewest), counting the rest as dropped;\n",
			dashboard.Queue, sampler.Queue)
	} else {
		fmt.Fprintf(out, "\nEvery worker read one order (the stream's), and every event: none was dropped, their queues\n"+
			"holding all %d;\n", c.events)
	}
	if c.keepsAll() {
		fmt.Fprintf(out, "late started at sequence 1 and, the stream keeping every event, read them all.\n")
	} else {
		fmt.Fprintf(out, "late started at sequence 1 after retention removed the oldest events, and counted them as gaps.\n")
	}
}

// newEvent returns the n-th event: order o-0001 created, paid, shipped,
// then o-0002, and so on.
func newEvent(n int) Event {
	kinds := []string{"created", "paid", "shipped"}
	return Event{N: n, Order: fmt.Sprintf("o-%04d", (n+2)/3), Kind: kinds[(n-1)%3], Cents: 100 * (n%7 + 1)}
}

// merge returns w with the server, credentials, topic and retention of
// base.
func merge(base, w worker) worker {
	w.Server, w.Creds, w.Topic, w.Retain = base.Server, base.Creds, base.Topic, base.Retain
	return w
}

// yes says "yes" or, for the eye to catch, "NO".
func yes(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

// redact hides a password in a server URL before it is printed.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// dial connects to a server, with credentials if given, reconnecting for
// as long as the demo runs, and returns the connection and its JetStream
// context. The caller closes the connection.
func dial(serverURL, creds, name string) (*nats.Conn, jetstream.JetStream, error) {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1)}
	if creds != "" {
		opts = append(opts, nats.UserCredentials(creds))
	}
	nc, err := nats.Connect(serverURL, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", redact(serverURL), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// workerEnv carries a worker's description to the process that plays it.
const workerEnv = "HERALD_NATS_EXAMPLE_WORKER"

// proc is a running worker process.
type proc struct {
	*child
	w     worker
	start uint64
}

// startWorker starts this program again as worker w and waits until its
// watcher is registered.
func startWorker(ctx context.Context, w worker) (*proc, error) {
	c, ready, err := startChild(ctx, "worker "+w.Name, workerEnv, w)
	if err != nil {
		return nil, err
	}
	p := &proc{child: c, w: w}
	if _, err := fmt.Sscanf(ready, "ready %d", &p.start); err != nil {
		p.kill()
		return nil, fmt.Errorf("worker %s: %q: %w", w.Name, ready, err)
	}
	return p, nil
}

// sync asks the worker to take in everything the stream holds (queue it,
// drop it by its policy, or count it as a gap) and waits until it has.
func (p *proc) sync() error {
	if _, err := io.WriteString(p.stdin, "sync\n"); err != nil {
		return err
	}
	if !p.out.Scan() || p.out.Text() != "synced" {
		return fmt.Errorf("no answer to sync: %q", p.out.Text())
	}
	return nil
}

// finish tells the worker that publishing is over and returns its result.
func (p *proc) finish() (result, error) {
	var r result
	if _, err := io.WriteString(p.stdin, "finish\n"); err != nil {
		return r, err
	}
	if !p.out.Scan() {
		return r, errors.New("no result")
	}
	if err := json.Unmarshal(p.out.Bytes(), &r); err != nil {
		return r, err
	}
	return r, p.cmd.Wait()
}

// workerMain plays the worker described by spec: it watches the topic,
// says "ready <start>", reads (as values come, or only at the end), flushes
// when asked, and on "finish" stops and reports on out.
func workerMain(spec string, in io.Reader, out io.Writer) int {
	var w worker
	if err := json.Unmarshal([]byte(spec), &w); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 2
	}
	if err := runWorker(w, in, out); err != nil {
		fmt.Fprintf(os.Stderr, "worker %s: %v\n", w.Name, err)
		return 1
	}
	return 0
}

// runWorker watches the topic as spec says, reads what comes (as it comes,
// or only once publishing is over), and prints its result.
func runWorker(spec worker, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	nc, js, err := dial(spec.Server, spec.Creds, "herald-example-"+spec.Name)
	if err != nil {
		return err
	}
	defer nc.Close()
	topic, err := natsbridge.NewTopic(ctx, js, spec.Topic, natsbridge.JSON[Event](), natsbridge.TopicOptions{MaxMsgs: int64(spec.Retain)})
	if err != nil {
		return err
	}
	defer topic.Shutdown(ctx)
	w, err := topic.Watch(ctx, natsbridge.WatchOptions{QueueLength: spec.Queue, Full: spec.Policy, From: spec.From})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "ready %d\n", w.Start())

	r := result{Start: w.Start(), InOrder: true}
	read := make(chan struct{})
	if spec.Read {
		go func() {
			defer close(read)
			for e := range w.All() { // ends after Stop, once the queue is read
				r.take(e)
			}
		}()
	}
	if err := answerSyncs(ctx, w, in, out); err != nil {
		return err
	}
	w.Stop()
	if spec.Read {
		<-read
	} else {
		for e := range w.All() {
			r.take(e)
		}
	}
	r.Dropped, r.Gaps, r.Restarts = w.Stats().Dropped, w.Stats().Gaps, w.Stats().Restarts
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, string(line))
	return nil
}

// take counts e as received, noting the first and last and whether they
// came in order.
func (r *result) take(e Event) {
	if r.Received > 0 && e.N <= r.Last {
		r.InOrder = false
	}
	if r.Received == 0 {
		r.First = e.N
	}
	r.Received++
	r.Last = e.N
}

// answerSyncs flushes w for each line on in: everything the stream holds
// is then in the queue, dropped by the policy, or counted as a gap.
// "sync" is answered with "synced"; "finish" returns.
func answerSyncs(ctx context.Context, w *natsbridge.Watcher[Event], in io.Reader, out io.Writer) error {
	lines := bufio.NewScanner(in)
	for {
		if !lines.Scan() {
			return fmt.Errorf("waiting for the end of publishing: %v", lines.Err())
		}
		if err := w.Flush(ctx); err != nil {
			return err
		}
		if lines.Text() == "finish" {
			return nil
		}
		fmt.Fprintln(out, "synced")
	}
}
