package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge"
)

// The last part: replicas that share the work. The packing service
// reads a partitioned topic (six partitions, a stream each) as a consumer
// group of three replicas: the group gives each replica two partitions,
// and each replica's handle.Pool handles its partitions' orders eight at
// a time, each order's events in order. Midway one replica is killed
// (SIGKILL) while its handlers work: once its partitions' pins expire,
// the two others share them, and the events it had not finished come
// again to them. Then a fourth joins, and takes its share: each partition
// it gains is handed over by its reader once that reader's handlers are
// done. One reader per partition at a time; every order's events handled
// in order throughout, checked against the log the replicas append to.

// partitionCount is how many partitions the packing topic has.
const partitionCount = 6

// orderCount is how many orders the packing events are spread over.
const orderCount = 30

// member is a running packing replica, followed as it reports its
// partitions.
type member struct {
	*child
	name string
	fate string

	mu      sync.Mutex // guards parts, settled, report
	parts   []int      // as it last said
	settled []int      // once the group settled, at the end
	report  memberReport
}

// packing runs the last part with n events, on a partitioned topic
// named after topic.
func packing(ctx context.Context, out io.Writer, js jetstream.JetStream, spec memberSpec, n int) error {
	dir, err := os.MkdirTemp("", "herald-packing-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	spec.Log = filepath.Join(dir, "log")
	pt, err := natsbridge.NewPartitioned(ctx, js, spec.Topic, natsbridge.JSON[Event](), byOrder,
		natsbridge.PartitionOptions{Partitions: partitionCount})
	if err != nil {
		return err
	}
	defer pt.Delete(context.Background())
	defer pt.Shutdown(ctx)
	fmt.Fprintf(out, "\npacking: a consumer group of three replicas on %s, %d partitions\n", spec.Topic, partitionCount)
	var group []*member
	defer func() {
		for _, m := range group {
			m.kill()
		}
	}()
	for _, name := range []string{"p1", "p2", "p3"} {
		m, err := startMember(ctx, spec, name)
		if err != nil {
			return err
		}
		group = append(group, m)
	}
	if _, err := waitSettled(ctx, group); err != nil {
		return err
	}
	killed, settled, err := killAndJoin(ctx, pt, spec, &group, n)
	if err != nil {
		return err
	}
	for _, m := range group {
		m.mu.Lock()
		m.settled = m.parts // before the stops give them to the others
		m.mu.Unlock()
	}
	for _, m := range group {
		if err := m.stop(); err != nil {
			return err
		}
	}
	return packingReport(out, spec.Log, group, n, settled.Sub(killed))
}

// killAndJoin publishes events 1..n: after the first half, a replica is
// killed while its handlers work; once the two others share its
// partitions, a fourth joins, takes its share, and the second half is
// published. It
// returns when the kill was and when the group settled after it, once
// every event was handled.
func killAndJoin(ctx context.Context, pt *natsbridge.Partitioned[Event], spec memberSpec, group *[]*member, n int) (killed, settled time.Time, err error) {
	pub, err := pt.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		return killed, settled, err
	}
	defer pub.Shutdown(ctx)
	half := n / 2
	if err := publishPacking(ctx, pub, 1, half); err != nil {
		return killed, settled, err
	}
	// p2 reads two partitions of six: a third of the events.
	if err := waitLogged(ctx, spec.Log, half/6, "p2"); err != nil {
		return killed, settled, err
	}
	victim := (*group)[1]
	victim.kill()
	victim.fate, killed = "killed (SIGKILL) mid-stream", time.Now()
	if settled, err = waitSettled(ctx, live(*group)); err != nil {
		return killed, settled, err
	}
	m, err := startMember(ctx, spec, "p4")
	if err != nil {
		return killed, settled, err
	}
	m.fate = "joined after the kill"
	*group = append(*group, m)
	if _, err := waitSettled(ctx, live(*group)); err != nil {
		return killed, settled, err
	}
	if err := publishPacking(ctx, pub, half+1, n); err != nil {
		return killed, settled, err
	}
	return killed, settled, waitLogged(ctx, spec.Log, n, "")
}

// publishPacking publishes events first..last of the packing part.
func publishPacking(ctx context.Context, pub *natsbridge.PartitionedPublisher[Event], first, last int) error {
	for i := first; i <= last; i++ {
		if err := pub.Publish(ctx, packingEvent(i)); err != nil {
			return err
		}
	}
	return nil
}

// packingEvent returns event i of the packing part: orders take
// turns, so that each order's events are spread over the stream.
func packingEvent(i int) Event {
	return Event{N: i, Order: fmt.Sprintf("order-%02d", (i-1)%orderCount), Kind: "packed"}
}

// live returns the members not killed.
func live(group []*member) []*member {
	var out []*member
	for _, m := range group {
		if !strings.HasPrefix(m.fate, "killed") {
			out = append(out, m)
		}
	}
	return out
}

// waitSettled returns when every partition is read by exactly one of
// members, and each of them reads at least one.
func waitSettled(ctx context.Context, members []*member) (time.Time, error) {
	for {
		owners := map[int]int{}
		settled := true
		for _, m := range members {
			m.mu.Lock()
			settled = settled && len(m.parts) > 0
			for _, p := range m.parts {
				owners[p]++
			}
			m.mu.Unlock()
		}
		for p := range partitionCount {
			settled = settled && owners[p] == 1
		}
		if settled {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("the packing group did not settle: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond): // polling what the members said
		}
	}
}

// waitLogged returns once the log holds n distinct events, handled by
// member if it is not empty.
func waitLogged(ctx context.Context, path string, n int, member string) error {
	for {
		seen := map[int]bool{}
		for _, l := range readLog(path) {
			if member == "" || l.member == member {
				seen[l.n] = true
			}
		}
		if len(seen) >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d events handled, want %d: %w", len(seen), n, ctx.Err())
		case <-time.After(20 * time.Millisecond): // polling the replicas' log
		}
	}
}

// logLine is one line of the packing log: an event handled.
type logLine struct {
	order  string
	n      int
	member string
}

// readLog returns the lines of the log at path, in the order they were
// appended.
func readLog(path string) []logLine {
	b, _ := os.ReadFile(path)
	var out []logLine
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue // a line being written
		}
		n, err := strconv.Atoi(f[1])
		if err == nil {
			out = append(out, logLine{order: f[0], n: n, member: f[2]})
		}
	}
	return out
}

// startMember starts this program again as packing replica name, and
// follows what it says.
func startMember(ctx context.Context, s memberSpec, name string) (*member, error) {
	s.Name = name
	c, ready, err := startChild(ctx, "member "+name, memberEnv, s)
	if err != nil {
		return nil, err
	}
	if ready != "ready" {
		c.kill()
		return nil, fmt.Errorf("member %s: %q", name, ready)
	}
	m := &member{child: c, name: name, fate: "throughout"}
	c.done = make(chan struct{})
	go m.follow(c.out)
	return m, nil
}

// follow takes the member's lines: "partitions [p …]", and its report.
func (m *member) follow(lines *bufio.Scanner) {
	defer close(m.done)
	for lines.Scan() {
		if s, ok := strings.CutPrefix(lines.Text(), "partitions "); ok {
			var parts []int
			for _, f := range strings.Fields(strings.Trim(s, "[]")) {
				if p, err := strconv.Atoi(f); err == nil {
					parts = append(parts, p)
				}
			}
			m.mu.Lock()
			m.parts = parts
			m.mu.Unlock()
			continue
		}
		var r memberReport
		if json.Unmarshal(lines.Bytes(), &r) == nil {
			m.mu.Lock()
			m.report = r
			m.mu.Unlock()
		}
	}
}

// packingReport prints a line per replica and checks the log: every
// event handled at least once, and each order's events in order.
func packingReport(out io.Writer, path string, group []*member, n int, settle time.Duration) error {
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "replica\tfate\tpartitions at the end\thandled\tredelivered\trebalances")
	var redelivered uint64
	for _, m := range group {
		parts := "-"
		if !strings.HasPrefix(m.fate, "killed") {
			parts = strings.Trim(fmt.Sprint(m.settled), "[]")
		}
		r := m.report
		redelivered += r.Redelivered
		handled := fmt.Sprint(r.Handled)
		if strings.HasPrefix(m.fate, "killed") {
			handled = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\n", m.name, m.fate, parts, handled, r.Redelivered, r.Rebalances)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	c := checkOrder(readLog(path))
	fmt.Fprintf(out, "the group settled %v after the kill\n", settle.Round(10*time.Millisecond))
	fmt.Fprintf(out, "every one of %d events handled at least once: %s; %d handled twice (the live replicas' redelivered count: %d)\n",
		n, yes(c.distinct == n), c.repeats, redelivered)
	fmt.Fprintf(out, "each of %d orders' events handled in order: %s\n", orderCount, yes(c.outOfOrder == 0))
	return nil
}

// orderCheck is what checkOrder found in the log.
type orderCheck struct {
	distinct   int // events handled
	repeats    int // handlings of an event handled before
	outOfOrder int // events handled before the previous event of their order
}

// checkOrder reads the log in order: within an order, each event handled
// either follows the last one handled (the order's next event) or is
// one handled before (a value redelivered after the kill, from where the
// killed replica's acknowledgements stopped); one handled before its
// order's previous event is out of order.
func checkOrder(log []logLine) orderCheck {
	var c orderCheck
	seen := map[int]bool{}
	last := map[string]int{} // the highest event handled of each order
	for _, l := range log {
		if seen[l.n] {
			c.repeats++
		}
		seen[l.n] = true
		prev, ok := last[l.order]
		switch {
		case !ok && l.n > orderCount: // the order's first event is 1..orderCount
			c.outOfOrder++
		case ok && l.n > prev+orderCount:
			c.outOfOrder++
		}
		last[l.order] = max(prev, l.n)
	}
	c.distinct = len(seen)
	return c
}
