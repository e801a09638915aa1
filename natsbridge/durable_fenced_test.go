package natsbridge_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
	"github.com/nats-io/nats.go/jetstream"
)

// TestDurableFencedReaderReadsOnInOrder: a durable reader whose record
// cannot be written for longer than its lease stops handing values out
// (fenced) and gives its turn up; when the record takes writes again and
// no other reader took the position meanwhile, the reader gets its turn
// back and reads on from the first value it did not hand out. The values
// in its handlers (handed out, not done) do not come again: each value is
// handed out once, in order, none counted as redelivered.
func TestDurableFencedReaderReadsOnInOrder(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := testCtx(t)
	topic := newTopic(t, js, "durable.fenced", natsbridge.TopicOptions{Logger: quiet})
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	publishAll(t, topic, 1, 40)
	var got []int
	next := func() {
		t.Helper()
		d, err := w.Receive(ctx)
		if err != nil {
			t.Fatalf("Receive after %v: %v (Stats %+v)", got, err, w.Stats())
		}
		got = append(got, d.Value.ID)
	}
	for range 10 {
		next() // in its handlers: never done
	}

	// The record out of reach for writes: its bucket's stream takes no
	// subject, so that a write finds no stream; reads still work.
	bucket := "KV_herald_" + topic.Stream()
	kvs, err := js.Stream(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	cfg := kvs.CachedInfo().Config
	subjects := cfg.Subjects
	cfg.Subjects = []string{"herald.test.nowhere"}
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	// The reader hands out what it reserved, then, fenced, holds the
	// rest back (counted in HandedBack).
	read := make(chan struct{})
	go func() {
		defer close(read)
		for len(got) < 60 {
			d, err := w.Receive(ctx)
			if err != nil {
				t.Errorf("Receive after %d values: %v (Stats %+v)", len(got), err, w.Stats())
				return
			}
			got = append(got, d.Value.ID)
			if d.Value.ID > 10 {
				w.Done(d.Seq)
			}
		}
	}()
	eventually(t, "the reader fenced, holding values back", func() bool { return w.Stats().HandedBack > 0 })
	cfg.Subjects = subjects
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	publishAll(t, topic, 41, 60)
	select {
	case <-read:
	case <-ctx.Done():
		t.Fatalf("read %d values of 60: %v (Stats %+v)", len(got), firstDiff(got, span(1, 60)), w.Stats())
	}
	if t.Failed() {
		return
	}
	if want := span(1, 60); !slices.Equal(got, want) {
		t.Fatalf("handed out %s; want 1..60 once each, in order", firstDiff(got, want))
	}
	if st := w.Stats(); st.Redelivered != 0 {
		t.Errorf("Stats %+v: want nothing redelivered", st)
	}
}

// TestDurableRecordWriteAnswerLost: a write of the durable record that
// landed but whose answer was lost (the server killed right after it, a
// connection cut) leaves the reader a revision behind its own record; it
// finds the record still its own and reads on, rather than stop as if
// another reader took the position over (with no other reader to read on,
// the position would stand still).
func TestDurableRecordWriteAnswerLost(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := testCtx(t)
	topic := newTopic(t, js, "durable.lost", natsbridge.TopicOptions{Logger: quiet})
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	publishAll(t, topic, 1, 10)
	var got []int
	for range 10 {
		d, err := w.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d.Value.ID)
		w.Done(d.Seq)
	}
	// The reader's last write, landed again: as if its answer was lost.
	kv, err := js.KeyValue(ctx, "herald_"+topic.Stream())
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Update(ctx, "d", e.Value(), e.Revision())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reader renews its record", func() bool {
		e, err := kv.Get(ctx, "d")
		return err == nil && e.Revision() > rev
	})
	publishAll(t, topic, 11, 40)
	short, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for len(got) < 40 {
		d, err := w.Receive(short)
		if err != nil {
			t.Fatalf("Receive after %d values: %v (Stats %+v)", len(got), err, w.Stats())
		}
		got = append(got, d.Value.ID)
		w.Done(d.Seq)
	}
	if !slices.Equal(got, span(1, 40)) {
		t.Fatalf("handed out %s; want 1..40 once each, in order", firstDiff(got, span(1, 40)))
	}
	if st := w.Stats(); st.Redelivered != 0 || st.HandedBack != 0 {
		t.Errorf("Stats %+v: want nothing redelivered or handed back", st)
	}
}

// TestDurableValueMidTakeAcrossResets: a value the application took from
// the queue just before its reader took the position over and rewound
// (here: held at the gate of a previous reader's lease) is not handed out
// from that old copy once it comes again, even after a later reset that
// does not rewind (a new pin, the record still this reader's): each value
// is handed out once, in order.
func TestDurableValueMidTakeAcrossResets(t *testing.T) {
	t.Parallel() // it waits out a lease, not on the CPU
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := testCtx(t)
	topic := newTopic(t, js, "durable.midtake", natsbridge.TopicOptions{Logger: quiet})
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "herald_" + topic.Stream(), History: 1, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	// A record of another reader, as a reader that died leaves it.
	claim := func(owner string, until time.Time) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"owner": owner, "handed": 0, "until": until.UnixNano()})
		if _, err := kv.Put(ctx, "d", b); err != nil {
			t.Fatal(err)
		}
	}
	claim("gone", time.Now().Add(12*time.Second)) // its lease runs on: value 1 waits at the gate
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 30 * time.Second})
	publishAll(t, topic, 1, 10)
	got := make(chan int, 64)
	go func() {
		for {
			d, err := w.Receive(ctx)
			if err != nil {
				return
			}
			got <- d.Value.ID
			w.Done(d.Seq)
		}
	}()
	eventually(t, "value 1 taken, waiting at the gate", func() bool { return w.Stats().Queued == 9 })
	stream, err := js.Stream(ctx, topic.Stream())
	if err != nil {
		t.Fatal(err)
	}
	// Another reader writes the record: at its next pin, this one takes
	// the position over again and rewinds to 1.
	claim("gone-too", time.Now().Add(-time.Second))
	if err := stream.UnpinConsumer(ctx, "d", "herald"); err != nil {
		t.Fatal(err)
	}
	publishAll(t, topic, 11, 11)
	eventually(t, "1..11 queued again", func() bool { st := w.Stats(); return st.HandedBack >= 9 && st.Queued == 11 })
	// A new pin, the record this reader's: a reset that does not rewind.
	if err := stream.UnpinConsumer(ctx, "d", "herald"); err != nil {
		t.Fatal(err)
	}
	publishAll(t, topic, 12, 12)
	eventually(t, "12 queued", func() bool { return w.Stats().Queued == 12 })
	var ids []int
	for len(ids) < 12 {
		select {
		case id := <-got:
			ids = append(ids, id)
		case <-ctx.Done():
			t.Fatalf("handed out %v; Stats %+v", ids, w.Stats())
		}
	}
	if !slices.Equal(ids, span(1, 12)) {
		t.Errorf("handed out %v; want 1..12 once each, in order (Stats %+v)", ids, w.Stats())
	}
}
