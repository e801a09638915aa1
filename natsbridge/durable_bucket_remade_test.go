package natsbridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestDurableBucketMadeAgainByAnotherCountsRedelivered: the bucket of
// records is deleted by hand and made again by another process (a watcher
// of another durable of the topic binding). The reader of "x" held a
// value; its record is gone from the new bucket, with no marker of its
// own: the bucket's mark says it was lost, so the value, if it comes
// again to a reader of "x", counts in Redelivered.
func TestDurableBucketMadeAgainByAnotherCountsRedelivered(t *testing.T) {
	const takeover = 2 * time.Second
	s := startServer(t, embedded.Options{})
	_, js1 := connect(t, s)
	_, js2 := connect(t, s)
	ctx := testCtx(t)
	ta := newTopic(t, js1, "remade", natsbridge.TopicOptions{})
	a := watch(t, ta, natsbridge.WatchOptions{Durable: "x", Takeover: takeover})
	defer a.Stop()
	publishAll(t, ta, 1, 3)
	first, err := a.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// first is held: its handler runs on.
	if err := js1.DeleteKeyValue(ctx, "herald_"+ta.Stream()); err != nil {
		t.Fatal(err)
	}
	tb := newTopic(t, js2, "remade", natsbridge.TopicOptions{})
	y := watch(t, tb, natsbridge.WatchOptions{Durable: "y", Takeover: takeover})
	defer y.Stop()

	again := false
	for deadline := time.Now().Add(5 * takeover); time.Now().Before(deadline) && !again; {
		rctx, cancel := context.WithTimeout(ctx, time.Until(deadline))
		d, err := a.Receive(rctx)
		cancel()
		if err != nil {
			break
		}
		if d.Seq == first.Seq {
			again = true
		}
	}
	if st := a.Stats(); again && st.Redelivered == 0 {
		t.Errorf("value %d handed out twice, Redelivered 0", first.Seq)
	}
}
