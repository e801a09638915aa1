package natsbridge_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestDurableReadsOnAfterItsRecordWasOutOfReach: a durable reader whose
// record is out of reach for longer than its lease stops handing values
// out (fenced); once the record is back, the position moves on again, in
// this reader or in a standby: a reader does not keep its turn while it
// hands nothing out.
func TestDurableReadsOnAfterItsRecordWasOutOfReach(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := testCtx(t)
	topic := newTopic(t, js, "durable.lease", natsbridge.TopicOptions{Logger: quiet})
	a := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	b := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	publishAll(t, topic, 1, 1)
	w, standby := servedFirst(ctx, t, a, b) // the server serves either: w read 1
	bucket := "herald_" + topic.Stream()
	if err := js.DeleteKeyValue(ctx, bucket); err != nil { // the record out of reach
		t.Fatal(err)
	}
	publishAll(t, topic, 2, 50)
	// It hands out what it had reserved, then, fenced, nothing.
	for {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := w.Next(rctx)
		cancel()
		if err != nil {
			break
		}
	}
	if st := w.Stats(); st.HandedBack == 0 {
		t.Fatalf("Stats %+v: want values handed back once the lease ran out", st)
	}
	// A reader makes the bucket again when it asks for the record (see
	// TestDurableRecordLostWhileReading); made here if none asked yet.
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, History: 1, Storage: jetstream.FileStorage}); err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
		t.Fatal(err)
	}
	publishAll(t, topic, 51, 51)
	got := make(chan int, 2)
	for _, r := range []*natsbridge.Watcher[Order]{w, standby} {
		go func() {
			rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			for {
				o, err := r.Next(rctx)
				if err != nil {
					// ErrClosed: the other reader won, and the test,
					// returning, stopped the watchers.
					if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, natsbridge.ErrClosed) {
						t.Errorf("Next of %p (w %p): %v (Err %v) %+v", r, w, err, r.Err(), r.Stats())
					}
					got <- 0
					return
				}
				if o.ID > 1 {
					got <- o.ID
					return
				}
			}
		}()
	}
	for range 2 {
		if id := <-got; id > 1 {
			return
		}
	}
	t.Errorf("neither reader handed out a value after 1 within 15s of the record coming back (reader: %+v; standby: %+v)", w.Stats(), standby.Stats())
}

// servedFirst reads the first value from whichever of a and b the server
// serves (it pins the first reader whose request is waiting when a value
// comes, and a process does not order its readers' requests), checks it
// is value 1, and returns that reader, then the other.
func servedFirst(ctx context.Context, t *testing.T, a, b *natsbridge.Watcher[Order]) (served, standby *natsbridge.Watcher[Order]) {
	t.Helper()
	type read struct {
		r   *natsbridge.Watcher[Order]
		o   Order
		err error
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	reads := make(chan read, 2)
	for _, r := range []*natsbridge.Watcher[Order]{a, b} {
		go func() {
			o, err := r.Next(rctx)
			reads <- read{r, o, err}
		}()
	}
	first := <-reads
	cancel()
	second := <-reads
	if first.err != nil || first.o.ID != 1 {
		t.Fatalf("Next = %v, %v; want 1", first.o, first.err)
	}
	if second.err == nil {
		t.Fatalf("both readers of one position handed out a value: %v and %v", first.o, second.o)
	}
	if first.r == a {
		return a, b
	}
	return b, a
}
