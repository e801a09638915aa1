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
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: 2 * time.Second})
	standby := watch(t, topic, natsbridge.WatchOptions{Durable: "d"})
	publishAll(t, topic, 1, 1)
	if o, err := w.Next(ctx); err != nil || o.ID != 1 {
		t.Fatalf("Next = %v, %v; want 1", o, err)
	}
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
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, History: 1, Storage: jetstream.FileStorage}); err != nil {
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
