package natsbridge

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge/embedded"
)

// lockedBuffer is a log's output, safe for concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestGroupStoppedLogsNothingItsStopCutShort: a call of a member's
// coordinator that the member's Stop cut short (its renewal, its read of
// the members) is no fault, and logs no warning; the same failure while
// the member runs does.
func TestGroupStoppedLogsNothingItsStopCutShort(t *testing.T) {
	srv, err := embedded.Start(embedded.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out lockedBuffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	pt, err := NewPartitioned(ctx, js, "ship", JSON[int](), strconv.Itoa, PartitionOptions{Partitions: 2, Topic: TopicOptions{Logger: log}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pt.Shutdown(ctx) }()
	m, err := pt.Join(ctx, "g", GroupOptions{Member: "a", Takeover: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cut, cutOff := context.WithCancel(ctx)
	cutOff() // a call cut short

	m.rebalance(cut)
	if !strings.Contains(out.String(), "group members not read") {
		t.Fatalf("a read of the members that failed while the member runs logged nothing:\n%s", out.String())
	}
	m.Stop()
	before := out.String()
	m.rebalance(cut)
	if after := out.String(); after != before {
		t.Errorf("a call a stopped member's Stop cut short logged:\n%s", after[len(before):])
	}
}
