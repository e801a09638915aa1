package natsbridge

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestDurableReaderOutOfTurnResetsNothing: a durable reader that lost its
// turn (the server serves another reader now), meeting a delivery it
// lost on the way among those made to it before, leaves the consumer
// where it is. A reset would put back what the server delivered to the
// reader it serves now, and drop that reader's acks of those values,
// unanswered: after a takeover, handing out one value at a time, each
// confirmed, it would wait out each ack's timeout (a position that
// crawled at a value per 2s under load).
func TestDurableReaderOutOfTurnResetsNothing(t *testing.T) {
	ctx, topic := ordersTopic(t)
	// The reader the server serves: it handed out 5 values and holds
	// deliveries beyond them.
	served, _ := servedReader(ctx, t, topic, 20, 5)
	cons, err := topic.stream.Consumer(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	before, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pinnedOf(before) == "" || before.Delivered.Stream <= before.AckFloor.Stream {
		t.Fatalf("the reader served holds no delivery beyond its floor, or is not pinned: %+v, pinned %q", before.Delivered, pinnedOf(before))
	}
	// The feed of a reader of the same position whose turn was an earlier
	// pin's: the next delivery it reads under that pin skips one.
	_, d, err := topic.bindDurable(ctx, WatchOptions{Durable: "d"})
	if err != nil {
		t.Fatal(err)
	}
	d.pin = "earlier"
	f := newFeed(topic, "watcher", 1, topic.newWatcher(1, WatchOptions{}, nil, d), d)
	late := &deliveryMsg{
		reply: fmt.Sprintf("$JS.ACK.%s.d.1.3.7.%d.0", topic.streamID, time.Now().UnixNano()),
		hdr:   nats.Header{pinHeader: []string{"earlier"}},
	}
	if err := f.consumeDurable(&oneDelivery{msg: late}, cons); !errors.Is(err, errNoMore) {
		t.Fatalf("consumeDurable = %v, want the iterator's end", err)
	}
	after, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Delivered.Stream != before.Delivered.Stream || after.Delivered.Consumer != before.Delivered.Consumer {
		t.Errorf("the consumer's deliveries went from %+v to %+v: a reader out of turn reset the position the server serves another reader at", before.Delivered, after.Delivered)
	}
	for range 15 {
		if _, err := served.Next(ctx); err != nil {
			t.Fatalf("the reader served: %v (Stats %+v)", err, served.Stats())
		}
	}
	served.Done(served.Seq()) // the last value: done, so that Stop hands the position over at once
	served.Stop()
}

// errNoMore ends a oneDelivery's messages.
var errNoMore = errors.New("no more messages")

// oneDelivery is a consumer's messages: msg, then errNoMore.
type oneDelivery struct {
	msg  jetstream.Msg
	sent bool
}

func (o *oneDelivery) Next(...jetstream.NextOpt) (jetstream.Msg, error) {
	if o.sent {
		return nil, errNoMore
	}
	o.sent = true
	return o.msg, nil
}

func (o *oneDelivery) Stop()  {}
func (o *oneDelivery) Drain() {}

// deliveryMsg is a message of a durable consumer as the read loop sees
// it: its reply subject and headers (the rest is not called).
type deliveryMsg struct {
	jetstream.Msg
	reply string
	hdr   nats.Header
}

func (m *deliveryMsg) Reply() string        { return m.reply }
func (m *deliveryMsg) Headers() nats.Header { return m.hdr }
