package natsbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestDurableValueGivenBackComesNext: a durable reader that took a value
// and could not hand it out before its ctx ended (here: a Receive waits,
// in the range a dead reader left, for the value before it to be done)
// hands it out at its next read. It is neither lost nor passed over: the
// values after it are acknowledged with AckAll, which would acknowledge
// it too.
func TestDurableValueGivenBackComesNext(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "durable.giveback", natsbridge.TopicOptions{})
	ctx := testCtx(t)
	// The record of a reader that died having handed out up to 5.
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "herald_" + topic.Stream(), History: 1, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(durableRec{Owner: "dead", Handed: 5})
	if _, err := kv.Put(ctx, "d", rec); err != nil {
		t.Fatal(err)
	}
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	publishAll(t, topic, 1, 5)

	first, err := w.Receive(ctx)
	if err != nil || first.Seq != 1 {
		t.Fatalf("Receive = seq %d, %v; want 1", first.Seq, err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if d, err := w.Receive(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive while 1 is outstanding in the dead reader's range = seq %d, %v; want it to wait", d.Seq, err)
	}
	w.Done(first.Seq)
	next, err := w.Receive(ctx)
	if err != nil || next.Seq != 2 {
		t.Errorf("Receive after the wait ended = seq %d, %v; want 2, the value given back (Stats %+v)", next.Seq, err, w.Stats())
	}
}
