package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/heraldgo/herald/natsbridge"
)

// The second part of the story: two services, billing and shipping, read
// the orders topic, each with two replicas (processes of their own) that
// share a durable position: one replica reads, the other stands by.
// Midway, billing's reading replica is killed (SIGKILL: no Stop, no last
// acknowledgement) and shipping's is stopped cleanly; the standbys take
// over, and the table shows what each replica handled.

// takeover is the replicas' WatchOptions.Takeover: how long a standby
// waits for a replica that died.
const takeover = 2 * time.Second

// replicaEnv carries a replica's description to the process that plays
// it.
const replicaEnv = "HERALD_NATS_EXAMPLE_REPLICA"

// replicaSpec describes one replica process.
type replicaSpec struct {
	Service string `json:"service"`
	Replica int    `json:"replica"`
	Server  string `json:"server"`
	Creds   string `json:"creds"`
	Topic   string `json:"topic"`
}

// replica is a running replica process, followed as it handles events.
type replica struct {
	*child
	spec   replicaSpec
	fate   string
	killed bool

	mu          sync.Mutex // guards handled, first, redelivered
	handled     []int      // the events it handled, in order
	first       time.Time  // when it handled its first event
	redelivered uint64     // from its report, once it stopped
	done        chan struct{}
}

// fleet is the running replicas, by service, in the order they started.
type fleet map[string][]*replica

// services runs the second part with events first..last, published by
// the orders service on topic.
func services(ctx context.Context, out io.Writer, topic *natsbridge.Topic[Event], spec replicaSpec, first, last int) error {
	reps := fleet{}
	defer reps.kill()
	if err := reps.start(ctx, spec); err != nil {
		return err
	}
	half := first + (last-first+1)/2 - 1
	if err := publishAndWait(ctx, topic, reps, first, half); err != nil {
		return err
	}
	// Midway: billing's reading replica dies, shipping's stops cleanly.
	dead, billingStandby := reps.active("billing")
	dead.kill()
	dead.killed, dead.fate = true, "killed (SIGKILL) midway"
	killed := time.Now()
	stopped, shippingStandby := reps.active("shipping")
	if err := stopped.stop(); err != nil {
		return err
	}
	stopped.fate = "stopped cleanly midway"
	handedOver := time.Now()

	if err := publishAndWait(ctx, topic, reps, half+1, last); err != nil {
		return err
	}
	billingStandby.fate = fmt.Sprintf("took over %v after the kill", billingStandby.since(killed))
	shippingStandby.fate = fmt.Sprintf("took over %v after the Stop", shippingStandby.since(handedOver))
	for _, r := range []*replica{billingStandby, shippingStandby} {
		if err := r.stop(); err != nil {
			return err
		}
	}
	return servicesReport(out, reps, first, last)
}

// start starts two replicas of billing and two of shipping, as spec says.
// On an error, the replicas started so far stay in f, for kill.
func (f fleet) start(ctx context.Context, spec replicaSpec) error {
	for _, svc := range []string{"billing", "shipping"} {
		for i := 1; i <= 2; i++ {
			s := spec
			s.Service, s.Replica = svc, i
			r, err := startReplica(ctx, s)
			if err != nil {
				return err
			}
			f[svc] = append(f[svc], r)
		}
	}
	return nil
}

// active returns the replica of svc that is reading (the one that handled
// more events) and its standby.
func (f fleet) active(svc string) (reading, standby *replica) {
	a, b := f[svc][0], f[svc][1]
	if len(b.read()) > len(a.read()) {
		a, b = b, a
	}
	return a, b
}

// kill kills every replica still running.
func (f fleet) kill() {
	for _, svc := range []string{"billing", "shipping"} {
		for _, r := range f[svc] {
			r.kill()
		}
	}
}

// publishAndWait publishes events first..last and returns once a replica
// of each service has handled event last.
func publishAndWait(ctx context.Context, topic *natsbridge.Topic[Event], reps fleet, first, last int) error {
	if err := publishEvents(ctx, topic, first, last); err != nil {
		return err
	}
	for _, svc := range []string{"billing", "shipping"} {
		if err := waitHandled(ctx, reps[svc], last); err != nil {
			return fmt.Errorf("%s: %w", svc, err)
		}
	}
	return nil
}

// publishEvents publishes events first..last as the orders service does,
// and waits for the stream to confirm them.
func publishEvents(ctx context.Context, topic *natsbridge.Topic[Event], first, last int) error {
	pub, err := topic.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		return err
	}
	for n := first; n <= last; n++ {
		if err := pub.Publish(ctx, newEvent(n)); err != nil {
			return err
		}
	}
	return pub.Shutdown(ctx)
}

// waitHandled returns once a replica of the service handled event last.
func waitHandled(ctx context.Context, reps []*replica, last int) error {
	for {
		for _, r := range reps {
			if h := r.read(); len(h) > 0 && h[len(h)-1] >= last {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("event %d not handled: %w", last, ctx.Err())
		case <-time.After(20 * time.Millisecond): // polling what the replicas said
		}
	}
}

// servicesReport prints a line per replica and what the service handled.
func servicesReport(out io.Writer, reps fleet, first, last int) error {
	fmt.Fprintf(out, "\nTwo services read the topic, each with two replicas sharing a durable position (Takeover %v):\n\n", takeover)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "service\treplica\twhat happened\thandled\tevents\tredelivered")
	summary := map[string][3]int{} // distinct, twice, redelivered
	for _, svc := range []string{"billing", "shipping"} {
		seen := map[int]int{}
		redelivered := 0
		for _, r := range reps[svc] {
			h := r.read()
			for _, n := range h {
				seen[n]++
			}
			events := "-"
			if len(h) > 0 {
				events = fmt.Sprintf("%d..%d", h[0], h[len(h)-1])
			}
			red := "-" // a killed replica reports nothing
			if !r.killed {
				r.mu.Lock()
				red = fmt.Sprint(r.redelivered)
				redelivered += int(r.redelivered)
				r.mu.Unlock()
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\n", svc, r.spec.Replica, r.fate, len(h), events, red)
		}
		distinct, twice := 0, 0
		for n := first; n <= last; n++ {
			if seen[n] > 0 {
				distinct++
			}
			if seen[n] > 1 {
				twice++
			}
		}
		summary[svc] = [3]int{distinct, twice, redelivered}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b, s := summary["billing"], summary["shipping"]
	fmt.Fprintf(out, "\nbilling handled %d of the %d events at least once, %d of them twice: those its killed replica had read\n"+
		"and not yet acknowledged, which came again to the standby (its redelivered count: %d). shipping handled\n"+
		"%d of %d, %d twice: a clean Stop acknowledges what was read, and the standby went on from there at once.\n",
		b[0], last-first+1, b[1], b[2], s[0], last-first+1, s[1])
	return nil
}

// startReplica starts this program again as replica s, waits until its
// watcher is registered, and follows what it handles.
func startReplica(ctx context.Context, s replicaSpec) (*replica, error) {
	c, ready, err := startChild(ctx, fmt.Sprintf("replica %s/%d", s.Service, s.Replica), replicaEnv, s)
	if err != nil {
		return nil, err
	}
	if ready != "ready" {
		c.kill()
		return nil, fmt.Errorf("replica %s/%d: %q", s.Service, s.Replica, ready)
	}
	r := &replica{child: c, spec: s, done: make(chan struct{})}
	go r.follow(c.out)
	return r, nil
}

// follow takes the replica's lines: "handled <event>", and its report.
func (r *replica) follow(lines *bufio.Scanner) {
	defer close(r.done)
	for lines.Scan() {
		var n int
		if _, err := fmt.Sscanf(lines.Text(), "handled %d", &n); err == nil {
			r.mu.Lock()
			if len(r.handled) == 0 {
				r.first = time.Now()
			}
			r.handled = append(r.handled, n)
			r.mu.Unlock()
			continue
		}
		var rep replicaReport
		if json.Unmarshal(lines.Bytes(), &rep) == nil {
			r.mu.Lock()
			r.redelivered = rep.Redelivered
			r.mu.Unlock()
		}
	}
}

// read returns the events the replica handled so far, in order.
func (r *replica) read() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.handled)
}

// since returns how long after t the replica handled its first event,
// rounded for the table.
func (r *replica) since(t time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := max(r.first.Sub(t), 0)
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(10 * time.Millisecond)
}

// stop asks the replica to stop its watcher (a clean Stop) and waits for
// its report.
func (r *replica) stop() error {
	if err := r.stdin.Close(); err != nil {
		return err
	}
	<-r.done
	return r.cmd.Wait()
}

// kill ends the replica process at once (SIGKILL) if it is still running.
func (r *replica) kill() {
	if r.cmd.ProcessState == nil {
		_ = r.cmd.Process.Kill()
		<-r.done
		_ = r.cmd.Wait()
	}
}

// replicaReport is what a replica prints when it stops.
type replicaReport struct {
	Redelivered uint64 `json:"redelivered"`
}

// replicaMain plays the replica described by spec: it watches the topic
// with its service's durable position, says "ready", then "handled <event>"
// for each event it handles, until its standard input closes; then it
// stops and reports.
func replicaMain(spec string, in io.Reader, out io.Writer) int {
	var s replicaSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 2
	}
	if err := runReplica(s, in, out); err != nil {
		fmt.Fprintf(os.Stderr, "replica %s/%d: %v\n", s.Service, s.Replica, err)
		return 1
	}
	return 0
}

// runReplica watches the topic with the service's durable position and
// handles events until in closes, then stops and reports.
func runReplica(s replicaSpec, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	nc, js, err := dial(s.Server, s.Creds, fmt.Sprintf("herald-example-%s-%d", s.Service, s.Replica))
	if err != nil {
		return err
	}
	defer nc.Close()
	// Not the topic's owner: zero options open it as the owner made it.
	topic, err := natsbridge.NewTopic(ctx, js, s.Topic, natsbridge.JSON[Event](), natsbridge.TopicOptions{})
	if err != nil {
		return err
	}
	defer topic.Shutdown(ctx)
	w, err := topic.Watch(ctx, natsbridge.WatchOptions{Durable: s.Service, Takeover: takeover})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "ready")
	stop, stopped := context.WithCancel(ctx)
	defer stopped()
	go func() {
		_, _ = io.Copy(io.Discard, in) // until the example closes it
		stopped()
	}()
	for stop.Err() == nil {
		e, err := w.Next(stop)
		if err != nil {
			break
		}
		fmt.Fprintf(out, "handled %d\n", e.N) // the service's work on the event
	}
	w.Stop()
	line, err := json.Marshal(replicaReport{Redelivered: w.Stats().Redelivered})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, string(line))
	return nil
}
