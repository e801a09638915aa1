package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestMain runs the tests under goleak; a test binary started by run as a
// worker plays the worker instead.
func TestMain(m *testing.M) {
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
	goleak.VerifyTestMain(m)
}

// TestRun runs the example with an embedded server and worker processes, and
// checks the lines its comments promise.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, &out, config{events: 300, retain: 200}); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"embedded NATS server with JetStream at nats://127.0.0.1:",
		"publisher: 300 events published, 300 confirmed by the stream (last sequence 300), 0 failed, 0 unconfirmed",
		//        worker  policy  queue start received events in order dropped gaps
		"audit      Block       256    1      300       1..300    yes       0        0",
		"dashboard  DropOldest  8      1      8         293..300  yes       292      0",
		"sampler    DropNewest  8      1      8         1..8      yes       292      0",
		"late       Block       64     1      200       101..300  yes       0        100",
		"shipping  1        stopped cleanly midway          150      301..450    0",
	} {
		if !strings.Contains(squash(out.String()), squash(want)) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// Billing handles four orders at once: how many events its killed
	// replica finished before the kill varies.
	if !regexp.MustCompile(`billing +1 +killed \(SIGKILL\) charging 525 +\d+ +301\.\.\d+ +-`).MatchString(out.String()) {
		t.Errorf("output lacks billing's killed replica:\n%s", out.String())
	}
	checkServices(t, out.String(), 300)
	checkTrace(t, out.String())
	checkPacking(t, out.String(), 300)
}

// checkPacking checks the packing service's summary: every event handled
// at least once, those handled twice within the redelivered counts, each
// order's events in order, and the replica added handling its share.
func checkPacking(t *testing.T, out string, n int) {
	t.Helper()
	m := regexp.MustCompile(`every one of (\d+) events handled at least once: yes; (\d+) handled twice \(the live replicas' redelivered count: (\d+)\)`).FindStringSubmatch(out)
	if m == nil || m[1] != strconv.Itoa(n) || atoi(t, m[2]) > atoi(t, m[3]) {
		t.Errorf("packing's summary %q: want all %d handled, those twice within the redelivered count:\n%s", m, n, out)
	}
	if !strings.Contains(out, "each of 30 orders' events handled in order: yes") {
		t.Errorf("output lacks the orders handled in order:\n%s", out)
	}
	m = regexp.MustCompile(`p4 +joined after the kill +(\d) (\d) +(\d+) `).FindStringSubmatch(out)
	if m == nil || atoi(t, m[3]) == 0 {
		t.Errorf("the replica added: %q; want two partitions and events handled:\n%s", m, out)
	}
}

// checkServices checks the services' summary: billing was handed every
// event at least once, those handed twice counted as redelivered; the
// charge the kill cut short was begun again, and the ledger charged every
// event once; shipping handled every event once.
func checkServices(t *testing.T, out string, n int) {
	t.Helper()
	m := regexp.MustCompile(`billing was handed all (\d+) events at least once, (\d+) of them twice \(its redelivered count: (\d+)\)`).FindStringSubmatch(out)
	if m == nil || m[1] != strconv.Itoa(n) || atoi(t, m[2]) == 0 || atoi(t, m[2]) > atoi(t, m[3]) {
		t.Errorf("billing's summary %q: want all %d handed out, some twice, each of those counted as redelivered:\n%s", m, n, out)
	}
	// The charge the kill was aimed at, and any other that billing's
	// four handlers had begun and not recorded when it landed.
	again := regexp.MustCompile(`(\d+) charges? (?:was|were) cut short by the kill and begun again`).FindStringSubmatch(out)
	if again == nil || atoi(t, again[1]) < 1 || m != nil && atoi(t, again[1]) > atoi(t, m[2]) {
		t.Errorf("the charges begun again %q: want at least the one the kill landed in, each handed out twice:\n%s", again, out)
	}
	m = regexp.MustCompile(`it holds (\d+) charges, (\d+) events\ncharged once each`).FindStringSubmatch(out)
	if m == nil || m[1] != strconv.Itoa(n) || m[2] != strconv.Itoa(n) {
		t.Errorf("the ledger's summary %q: want %d charges of %d events:\n%s", m, n, n, out)
	}
	if want := fmt.Sprintf("shipping handled %d of %d, 0 twice", n, n); !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestTraces runs the third part alone: every order's two spans are in
// one trace, the fulfilment process's a child of the orders process's,
// and each process's metrics count the orders.
func TestTraces(t *testing.T) {
	srv, err := embedded.Start(embedded.Options{Dir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, js, err := dial(srv.URL(), "", "herald-example-test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	topic, err := natsbridge.NewTopic(ctx, js, "herald.example.traces", natsbridge.JSON[Event](), natsbridge.TopicOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer topic.Shutdown(ctx)
	var out strings.Builder
	if err := traces(ctx, &out, topic, consumerSpec{Server: srv.URL(), Topic: topic.Name()}, 1); err != nil {
		t.Fatalf("traces: %v\n%s", err, out.String())
	}
	checkTrace(t, out.String())
	if !strings.Contains(out.String(), "o-0001") {
		t.Errorf("the first order after no event is not o-0001:\n%s", out.String())
	}
}

// checkTrace checks the third part's tables: a line per order whose trace
// ids are equal and whose worker's parent is the publisher's span, each
// order in a trace of its own, and the metrics' counts.
func checkTrace(t *testing.T, out string) {
	t.Helper()
	rows := regexp.MustCompile(`(?m)^o-\d{4} +([0-9a-f]{32}) +([0-9a-f]{32}) +([0-9a-f]{16}) +([0-9a-f]{16})$`).FindAllStringSubmatch(out, -1)
	if len(rows) != tracedOrders {
		t.Errorf("%d orders with both spans, want %d:\n%s", len(rows), tracedOrders, out)
	}
	traces := map[string]bool{}
	for _, r := range rows {
		if r[1] != r[2] {
			t.Errorf("%q: the fulfilment span's trace %s, want the orders span's %s", r[0], r[2], r[1])
		}
		if r[3] != r[4] {
			t.Errorf("%q: the fulfilment span's parent %s, want the orders span %s", r[0], r[4], r[3])
		}
		traces[r[1]] = true
	}
	if len(traces) != len(rows) {
		t.Errorf("%d traces for %d orders, want one each:\n%s", len(traces), len(rows), out)
	}
	n := strconv.Itoa(tracedOrders)
	for _, want := range []string{
		"Each order.handled span is in its order's trace, a child of its order.placed span",
		"orders messaging.client.sent.messages " + n + " messaging.client.id=orders messaging.operation.name=publish",
		"orders messaging.client.sent.messages 0 error.type=invalid messaging.client.id=orders messaging.operation.name=publish",
		"orders herald.nats.publisher.settled " + n + " messaging.client.id=orders",
		"orders herald.nats.publisher.settled 0 error.type=failed messaging.client.id=orders",
		"orders herald.nats.publisher.pending 0 messaging.client.id=orders",
		"fulfilment messaging.client.consumed.messages " + n + " messaging.client.id=fulfilment messaging.operation.name=receive",
		"fulfilment herald.nats.watcher.dropped 0 herald.drop.reason=gap messaging.client.id=fulfilment",
		"fulfilment herald.nats.watcher.queue.depth 0 messaging.client.id=fulfilment",
	} {
		if !strings.Contains(squash(out), squash(want)) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestRunAgainstServer points the example at a server it did not start, as
// -server does, and checks that it leaves no stream behind.
func TestRunAgainstServer(t *testing.T) {
	srv, err := embedded.Start(embedded.Options{Dir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, &out, config{server: srv.URL(), events: 90, retain: 60}); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"NATS server at " + srv.URL(),
		"publisher: 90 events published, 90 confirmed",
		"late       Block       64     1      60        31..90    yes       0        30",
	} {
		if !strings.Contains(squash(out.String()), squash(want)) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		t.Errorf("stream %q left on the server", name)
	}
}

// TestRunRetainZero: -retain 0 keeps every event, as a zero MaxMsgs does
// in natsbridge: the late worker reads them all and counts no gap.
func TestRunRetainZero(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out strings.Builder
	done := make(chan error, 1)
	go func() { done <- run(ctx, &out, config{events: 90, retain: 0}) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
	case <-ctx.Done():
		t.Fatal("run with retain 0 did not return")
	}
	for _, want := range []string{
		"the stream keeps every event",
		"publisher: 90 events published, 90 confirmed by the stream (last sequence 90), 0 failed, 0 unconfirmed",
		"audit      Block       256    1      90        1..90     yes       0        0",
		"late       Block       64     1      90        1..90     yes       0        0",
	} {
		if !strings.Contains(squash(out.String()), squash(want)) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRunRetainAboveEvents: a -retain above -events (the largest one
// included) keeps every event, and the text says what the table shows:
// five events, none dropped, no gap.
func TestRunRetainAboveEvents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, &out, config{events: 5, retain: math.MaxInt}); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"the stream keeps every event",
		"dashboard DropOldest 8 1 5 1..5 yes 0 0",
		"none was dropped",
		"the stream keeping every event, read them all",
	} {
		if !strings.Contains(squash(out.String()), squash(want)) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "gaps.") {
		t.Errorf("output speaks of gaps with none:\n%s", out.String())
	}
}

// TestRunNegative: a negative -events or -retain is refused with a message
// naming the flag, before anything starts.
func TestRunNegative(t *testing.T) {
	tests := []struct {
		c    config
		want string
	}{
		{config{events: 10, retain: -1}, "-retain -1"},
		{config{events: -1, retain: 10}, "-events -1"},
	}
	for _, tc := range tests {
		var out strings.Builder
		if err := run(context.Background(), &out, tc.c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%+v) = %v, want an error naming %q", tc.c, err, tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("run(%+v) wrote %q before refusing", tc.c, out.String())
		}
	}
}

// squash collapses runs of white space, so that the table's column widths
// do not matter.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

func TestRedact(t *testing.T) {
	if got := redact("nats://alice:s3cret@example.com:4222"); strings.Contains(got, "s3cret") {
		t.Errorf("redact kept the password: %q", got)
	}
}
