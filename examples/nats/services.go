package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/heraldgo/herald/handle"
	"github.com/heraldgo/herald/natsbridge"
)

// The second part of the story: two services, billing and shipping, read
// the orders topic, each with two replicas (processes of their own) that
// share a durable position: one replica reads, the other stands by.
// Midway, shipping's reading replica is stopped cleanly, and billing's is
// killed (SIGKILL: no Stop, no last acknowledgement) in the middle of
// charging an event; the standbys take over, and the table shows what each
// replica handled.
//
// A durable watcher acknowledges an event once its handler returned, so
// the event whose charge was cut short comes again to billing's standby,
// and is charged; so do the events the killed replica had charged and not
// yet had acknowledged. Billing keeps a ledger of the stream sequences it
// charged (a file here; a table in a real service) and skips those, so
// that every event is charged once: idempotent by its sequence.

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
	// Billing's: its ledger (a file the replicas share), and the event
	// whose charge takes long enough for the kill to land in it.
	Ledger string `json:"ledger,omitempty"`
	Slow   int    `json:"slow,omitempty"`
}

// replica is a running replica process, followed as it handles events.
type replica struct {
	*child
	spec   replicaSpec
	fate   string
	killed bool

	mu          sync.Mutex // guards handled, charging, skipped, first, redelivered
	handled     []int      // the events it handled, in order
	charging    []int      // billing: the events whose charge it began
	skipped     []int      // billing: the events its ledger said were charged
	first       time.Time  // when it handled its first event
	redelivered uint64     // from its report, once it stopped
}

// fleet is the running replicas, by service, in the order they started.
type fleet map[string][]*replica

// services runs the second part with events first..last, published by
// the orders service on topic.
func services(ctx context.Context, out io.Writer, topic *natsbridge.Topic[Event], spec replicaSpec, first, last int) error {
	dir, err := os.MkdirTemp("", "herald-billing-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	spec.Ledger = filepath.Join(dir, "ledger")
	half := first + (last-first+1)/2 - 1
	spec.Slow = half + (last-half)/2 // billing's reading replica is killed charging it
	reps := fleet{}
	defer reps.kill()
	if err := reps.start(ctx, spec); err != nil {
		return err
	}
	if err := publishAndWait(ctx, topic, reps, first, half); err != nil {
		return err
	}
	// Midway: shipping's reading replica stops cleanly; billing's dies in
	// the middle of a charge.
	stopped, shippingStandby := reps.active("shipping")
	if err := stopped.stop(); err != nil {
		return err
	}
	stopped.fate = "stopped cleanly midway"
	handedOver := time.Now()
	dead, billingStandby := reps.active("billing")
	if err := publishEvents(ctx, topic, half+1, last); err != nil {
		return err
	}
	if err := dead.waitCharging(ctx, spec.Slow); err != nil {
		return err
	}
	dead.kill()
	dead.killed, dead.fate = true, fmt.Sprintf("killed (SIGKILL) charging %d", spec.Slow)
	killed := time.Now()
	for _, svc := range []string{"billing", "shipping"} {
		if err := waitHandled(ctx, reps[svc], first, last); err != nil {
			return fmt.Errorf("%s: %w", svc, err)
		}
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
		if err := waitHandled(ctx, reps[svc], first, last); err != nil {
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

// waitHandled returns once the service's replicas, together, handled (or,
// billing, skipped as charged before) every event first..last: billing
// handles several orders at once, so events end out of order.
func waitHandled(ctx context.Context, reps []*replica, first, last int) error {
	for {
		seen := map[int]bool{}
		for _, r := range reps {
			for _, n := range r.read() {
				seen[n] = true
			}
			r.mu.Lock()
			for _, n := range r.skipped {
				seen[n] = true
			}
			r.mu.Unlock()
		}
		missing := 0
		for n := first; n <= last; n++ {
			if !seen[n] {
				missing++
			}
		}
		if missing == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of events %d..%d not handled: %w", missing, first, last, ctx.Err())
		case <-time.After(20 * time.Millisecond): // polling what the replicas said
		}
	}
}

// servicesReport prints a line per replica and what each service handled.
func servicesReport(out io.Writer, reps fleet, first, last int) error {
	fmt.Fprintf(out, "\nTwo services read the topic, each with two replicas sharing a durable position (Takeover %v):\n\n", takeover)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "service\treplica\twhat happened\thandled\tevents\tredelivered")
	b, s := serviceTally(tw, "billing", reps["billing"], first, last), serviceTally(tw, "shipping", reps["shipping"], first, last)
	if err := tw.Flush(); err != nil {
		return err
	}
	n := last - first + 1
	entries, once := ledgerCount(reps["billing"][0].spec.Ledger)
	fmt.Fprintf(out, "\nbilling was handed all %d events at least once, %d of them twice (its redelivered count: %d): those its\n"+
		"killed replica had begun and not yet had acknowledged (the count adds those it may have begun: what it had\n"+
		"reserved, about twice what it handed out in its last 100ms). %s cut short by the kill and begun again;\n"+
		"%d events already charged were skipped, the ledger knowing their sequence: it holds %d charges, %d events\n"+
		"charged once each.\n"+
		"shipping handled %d of %d, %d twice: a clean Stop acknowledges what was handled, and the standby went on\n"+
		"from there at once.\n",
		b.distinct, b.twice, b.redelivered, charges(b.again), b.skipped, entries, once, s.distinct, n, s.twice)
	return nil
}

// charges says how many charges were cut short: the one the kill was
// aimed at, and any other of billing's four handlers had begun.
func charges(n int) string {
	if n == 1 {
		return "1 charge was"
	}
	return fmt.Sprintf("%d charges were", n)
}

// tally is what one service's replicas did with events first..last.
type tally struct{ distinct, twice, redelivered, again, skipped int }

// serviceTally writes a line per replica of svc to tw, and returns what
// they did together.
func serviceTally(tw io.Writer, svc string, reps []*replica, first, last int) tally {
	seen, began := map[int]int{}, map[int]int{}
	var t tally
	for _, r := range reps {
		h := r.read()
		r.mu.Lock()
		for _, n := range h {
			seen[n]++
		}
		for _, n := range r.charging {
			began[n]++
		}
		t.skipped += len(r.skipped)
		for _, n := range r.skipped {
			seen[n]++ // handed to the replica again, and skipped
		}
		red := "-" // a killed replica reports nothing
		if !r.killed {
			red = fmt.Sprint(r.redelivered)
			t.redelivered += int(r.redelivered)
		}
		r.mu.Unlock()
		events := "-"
		if len(h) > 0 {
			events = fmt.Sprintf("%d..%d", slices.Min(h), slices.Max(h))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\n", svc, r.spec.Replica, r.fate, len(h), events, red)
	}
	for n := first; n <= last; n++ {
		if seen[n] > 0 {
			t.distinct++
		}
		if seen[n] > 1 {
			t.twice++
		}
		if began[n] > 1 {
			t.again++
		}
	}
	return t
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
	r := &replica{child: c, spec: s}
	c.done = make(chan struct{})
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
		if _, err := fmt.Sscanf(lines.Text(), "charging %d", &n); err == nil {
			r.mu.Lock()
			r.charging = append(r.charging, n)
			r.mu.Unlock()
			continue
		}
		if _, err := fmt.Sscanf(lines.Text(), "skipped %d", &n); err == nil {
			r.mu.Lock()
			if len(r.handled)+len(r.skipped) == 0 {
				r.first = time.Now()
			}
			r.skipped = append(r.skipped, n)
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

// waitCharging returns once the replica has begun to charge event n.
func (r *replica) waitCharging(ctx context.Context, n int) error {
	for {
		r.mu.Lock()
		began := slices.Contains(r.charging, n)
		r.mu.Unlock()
		if began {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("billing did not begin to charge event %d: %w", n, ctx.Err())
		case <-time.After(20 * time.Millisecond): // polling what the replica said
		}
	}
}

// bill is billing's replica: it charges four orders at once, each order's
// events in order; each event is acknowledged once charged. The Pool owns
// the watcher: its Shutdown, once the example closes the standard input,
// lets the charges in flight finish and hands the position over.
func bill(ctx context.Context, s replicaSpec, w *natsbridge.Watcher[Event], in io.Reader, out io.Writer) error {
	p := handle.New(w, func(e Event) string { return e.Order }, func(ctx context.Context, e Event) error {
		charge(s, handle.Seq(ctx), e, out)
		return nil
	}, handle.Options{Workers: 4})
	_, _ = io.Copy(io.Discard, in)
	return p.Shutdown(ctx)
}

// charge is billing's handler: it charges event e, stored at seq, unless
// the ledger says seq was charged (by this replica or another, before a
// crash): idempotent by the event's sequence. The first charge of event
// s.Slow takes a minute: the example kills the replica in the middle of
// it.
func charge(s replicaSpec, seq uint64, e Event, out io.Writer) {
	if charged(s.Ledger, seq) {
		fmt.Fprintf(out, "skipped %d\n", e.N)
		return
	}
	fmt.Fprintf(out, "charging %d\n", e.N)
	if e.N == s.Slow && firstTry(s.Ledger+".slow") {
		time.Sleep(time.Minute) // a slow payment provider; the kill lands here
	}
	if err := record(s.Ledger, seq); err != nil {
		fmt.Fprintln(os.Stderr, "billing: ledger:", err)
		os.Exit(1)
	}
	fmt.Fprintf(out, "handled %d\n", e.N)
}

// charged reports whether the ledger at path holds seq.
func charged(path string, seq uint64) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	want := strconv.FormatUint(seq, 10)
	for line := range strings.Lines(string(b)) {
		if strings.TrimSpace(line) == want {
			return true
		}
	}
	return false
}

// firstTry reports whether the file at path did not exist, creating it.
func firstTry(path string) bool {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// ledgerCount returns how many charges the ledger at path holds, and how
// many distinct sequences are among them.
func ledgerCount(path string) (entries, distinct int) {
	b, _ := os.ReadFile(path)
	seen := map[string]bool{}
	for line := range strings.Lines(string(b)) {
		entries++
		seen[strings.TrimSpace(line)] = true
	}
	return entries, len(seen)
}

// record appends seq to the ledger at path, once the charge is made.
func record(path string, seq uint64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, seq); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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
	if s.Service == "billing" {
		if err := bill(ctx, s, w, in, out); err != nil {
			return err
		}
	} else {
		go func() {
			_, _ = io.Copy(io.Discard, in) // until the example closes it
			w.Stop()                       // takes effect when the event in hand is handled
		}()
		for e := range w.All() { // each event is acknowledged once its body returns
			fmt.Fprintf(out, "handled %d\n", e.N) // the service's work on the event
		}
	}
	if err := w.Shutdown(ctx); err != nil {
		return err
	}
	line, err := json.Marshal(replicaReport{Redelivered: w.Stats().Redelivered})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, string(line))
	return nil
}
