package natsbridge_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestMirrorStreamDeletedKeepsBacklog: when the stream is deleted, the
// mirror's feed shuts its broadcaster down, and a broadcaster's Shutdown
// delivers every value queued before it. A Block local watcher whose reader
// is behind still receives every value the mirror had taken: the feed's own
// reaction to that Shutdown must not cut it short.
func TestMirrorStreamDeletedKeepsBacklog(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "attack.mirror.deleted", natsbridge.TopicOptions{})
	ctx := testCtx(t)
	b, err := topic.Mirror(ctx, broadcast.Options{QueueLength: 1, IncomingQueueLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.Watch()
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	publishAll(t, topic, 1, n)
	eventually(t, "the mirror took every value", func() bool { return b.Stats().Published == n })
	if err := js.DeleteStream(ctx, topic.Stream()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.Done():
	case <-ctx.Done():
		t.Fatal("the mirror's broadcaster was not shut down after the stream was deleted")
	}
	var got []int
	for {
		v, err := w.Next(ctx)
		if errors.Is(err, broadcast.ErrClosed) {
			break
		}
		if err != nil {
			t.Fatalf("Next after %d values: %v", len(got), err)
		}
		got = append(got, v.ID)
	}
	if diff := cmp.Diff(span(1, n), got); diff != "" {
		t.Errorf("local watcher after the stream was deleted (-want +got):\n%s\nbroadcaster stats %+v", diff, b.Stats())
	}
}
