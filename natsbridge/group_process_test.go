package natsbridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/handle"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
	"github.com/heraldgo/herald/natsbridge/natstest"
)

// groupKeys is how many keys the group tests' values spread over.
const groupKeys = 60

func groupKey(o Order) string { return "k" + strconv.Itoa(o.ID%groupKeys) }

// TestGroupMembersKilledAndAdded runs a consumer group of member
// processes on a partitioned topic of 6 partitions, on one server and on
// a 3-node cluster: three members; one is killed (SIGKILL) mid-stream; a
// fourth joins; on the cluster, the stream leader of one partition is
// killed too. Throughout, each member handles each key's values in order,
// every value is handled at least once, the values handled twice are
// counted in the members' Redelivered, and once the group settles every
// partition is read by exactly one member. The time to settle after the
// kill is measured.
func TestGroupMembersKilledAndAdded(t *testing.T) {
	t.Parallel() // it waits on processes and takeovers, not on the CPU
	for _, server := range []string{"single", "cluster"} {
		t.Run(server, func(t *testing.T) {
			var url string
			var c *natstest.Cluster
			if server == "single" {
				url = startServer(t, embedded.Options{Listen: "127.0.0.1:0"}).URL()
			} else {
				c = natstest.StartCluster(t, 3, natstest.Options{})
				url = c.URL()
			}
			groupScenario(t, url, c)
		})
	}
}

func groupScenario(t *testing.T, url string, c *natstest.Cluster) {
	_, js := dial(t, url)
	name := "group.orders"
	replicas := 1
	if c != nil {
		replicas = 3
	}
	pt, err := natsbridge.NewPartitioned(testCtx(t), js, name, natsbridge.JSON[Order](), groupKey,
		natsbridge.PartitionOptions{Partitions: 6, Topic: natsbridge.TopicOptions{Replicas: replicas, Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pt.Shutdown(context.Background()) })
	ctx := faultCtx(t)
	env := []string{topicEnv + "=" + name}
	var members []*memberFollower
	for _, m := range []string{"a", "b", "c"} {
		members = append(members, followMember(t, startHelper(t, ctx, "member", url, m, 0, env...)))
	}
	settled := func() bool { return groupSettled(members, pt.Partitions()) }
	eventually(t, "three members share the six partitions", settled)
	pub, err := pt.Publisher(natsbridge.PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	published := make(chan error, 1)
	go func() {
		for i := 1; i <= n; i++ {
			if err := pub.Publish(ctx, Order{ID: i}); err != nil {
				published <- err
				return
			}
			if i%200 == 0 {
				time.Sleep(20 * time.Millisecond) // a steady stream: the load, not a synchronisation
			}
		}
		published <- pub.Shutdown(ctx)
	}()
	eventually(t, "a third handled", func() bool { return len(handledBy(members)) >= n/3 })
	victim := members[1]
	victim.kill()
	killed := time.Now()
	eventually(t, "the two left share the six partitions", func() bool { return groupSettled(members, pt.Partitions()) })
	settle := time.Since(killed)
	members = append(members, followMember(t, startHelper(t, ctx, "member", url, "d", 0, env...)))
	eventually(t, "four members share the six partitions", func() bool { return groupSettled(members, pt.Partitions()) })
	if c != nil {
		leader := c.StreamLeader(js, pt.Topic(2).Stream())
		leader.Kill()
		c.WaitStreamLeader(js, pt.Topic(2).Stream(), leader)
		leader.Restart()
	}
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	eventually(t, "every value handled", func() bool {
		seen := handledBy(members)
		for i := 1; i <= n; i++ {
			if seen[i] == 0 {
				return false
			}
		}
		return true
	})
	var redelivered uint64
	for _, m := range members {
		if m == victim {
			continue
		}
		r := m.stop(t)
		redelivered += r.Redelivered
	}
	twice := 0
	for _, k := range handledBy(members) {
		if k > 1 {
			twice += k - 1
		}
	}
	for _, m := range members {
		if bad := m.outOfOrder(); bad != "" {
			t.Errorf("member %s: %s", m.name, bad)
		}
	}
	if uint64(twice) > redelivered {
		t.Errorf("%d values handled twice, %d counted as redelivered", twice, redelivered)
	}
	logFault(t, "group of 3 on 6 partitions (%d replicas): a member killed, the group settled %v after; a fourth joined; %d handled twice, %d redelivered",
		replicas, settle.Round(time.Millisecond), twice, redelivered)
}

// memberFollower reads a member helper's lines: "start <id>" as a handler
// begins, "parts <list>" as its partitions change, then its report.
type memberFollower struct {
	name   string
	f      *follower
	mu     sync.Mutex // guards starts, parts
	starts []int
	parts  []int
}

func followMember(t *testing.T, h *helper) *memberFollower {
	t.Helper()
	if line := h.line(t); line != "ready" {
		t.Fatalf("%s said %q, want ready", h.role, line)
	}
	mf := &memberFollower{name: h.role, f: &follower{h: h, done: make(chan struct{})}}
	go func() {
		defer close(mf.f.done)
		for h.out.Scan() {
			line := h.out.Text()
			var id int
			if _, err := fmt.Sscanf(line, "start %d", &id); err == nil {
				mf.mu.Lock()
				mf.starts = append(mf.starts, id)
				mf.mu.Unlock()
				continue
			}
			if rest, ok := strings.CutPrefix(line, "parts "); ok {
				var parts []int
				_ = json.Unmarshal([]byte(rest), &parts)
				mf.mu.Lock()
				mf.parts = parts
				mf.mu.Unlock()
				continue
			}
			var r report
			if json.Unmarshal([]byte(line), &r) == nil {
				mf.f.mu.Lock()
				mf.f.report = r
				mf.f.mu.Unlock()
			}
		}
	}()
	return mf
}

func (m *memberFollower) kill() {
	m.f.kill()
	m.mu.Lock()
	m.parts = nil
	m.mu.Unlock()
}

func (m *memberFollower) stop(t *testing.T) report { return m.f.stop(t) }

// outOfOrder describes a key whose values the member began out of order
// (a retry begins a value again right after its first attempt), or "".
func (m *memberFollower) outOfOrder() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	last := map[string]int{}
	for _, id := range m.starts {
		k := groupKey(Order{ID: id})
		if id < last[k] {
			return fmt.Sprintf("key %s: value %d began after %d", k, id, last[k])
		}
		last[k] = id
	}
	return ""
}

// handledBy returns how many times each value was begun, by all members.
func handledBy(ms []*memberFollower) map[int]int {
	seen := map[int]int{}
	for _, m := range ms {
		m.mu.Lock()
		for _, id := range m.starts {
			seen[id]++
		}
		m.mu.Unlock()
	}
	return seen
}

// groupSettled reports whether the live members' partitions are p, each
// once.
func groupSettled(ms []*memberFollower, p int) bool {
	var all []int
	for _, m := range ms {
		m.mu.Lock()
		all = append(all, m.parts...)
		m.mu.Unlock()
	}
	slices.Sort(all)
	if len(all) != p {
		return false
	}
	for i, x := range all {
		if x != i {
			return false
		}
	}
	return true
}

// playMember is the "member" role: it joins group "ship" of the
// partitioned topic topicEnv names, as member nameEnv, and handles its
// values with a handle.Pool of 4 workers keyed by the partition key. It
// prints "start <id>" as a handler begins, and "parts <list>" whenever its
// partitions change. When its standard input closes, it shuts the Pool
// down and reports.
func playMember(ctx context.Context, js jetstream.JetStream) (report, error) {
	var r report
	pt, err := natsbridge.NewPartitioned(ctx, js, os.Getenv(topicEnv), natsbridge.JSON[Order](), groupKey, natsbridge.PartitionOptions{})
	if err != nil {
		return r, err
	}
	defer pt.Shutdown(ctx)
	m, err := pt.Join(ctx, "ship", natsbridge.GroupOptions{Member: os.Getenv(nameEnv), Takeover: 2 * time.Second})
	if err != nil {
		return r, err
	}
	out := bufio.NewWriter(os.Stdout)
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		fmt.Fprintf(out, format, args...)
		out.Flush()
		outMu.Unlock()
	}
	p := handle.New(m, m.Key, func(ctx context.Context, o Order) error {
		say("start %d\n", o.ID)
		time.Sleep(time.Millisecond) // the handler's work
		return nil
	}, handle.Options{Workers: 4})
	say("ready\n")
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		var last []int
		for {
			if parts := m.Stats().Partitions; !slices.Equal(parts, last) {
				b, _ := json.Marshal(parts)
				say("parts %s\n", b)
				last = parts
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond): // the test reads the member's partitions as they change
			}
		}
	}()
	_, _ = io.Copy(io.Discard, os.Stdin) // until the test closes it
	close(stop)
	<-watched
	if err := p.Shutdown(ctx); err != nil {
		return r, err
	}
	r.Redelivered = m.Stats().Redelivered
	b, _ := json.Marshal(r)
	say("%s\n", b)
	return r, errPrinted
}
