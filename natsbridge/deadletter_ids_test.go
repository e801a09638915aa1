package natsbridge_test

import (
	"errors"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/heraldgo/herald/handle"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// deadLetters reads every dead letter dlq holds now.
func deadLetters(t *testing.T, dlq *natsbridge.Topic[natsbridge.DeadLetter]) []natsbridge.DeadLetter {
	t.Helper()
	return storedFrom(t, dlq, 1)
}

// storedFrom reads the values topic holds now from sequence from on.
func storedFrom[T any](t *testing.T, topic *natsbridge.Topic[T], from uint64) []T {
	t.Helper()
	w := watchTopic(t, topic, natsbridge.WatchOptions{From: from})
	if err := w.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	var out []T
	for v := range w.All() {
		out = append(out, v)
	}
	return out
}

// TestDeadLettersOfTwoDurablesBothKept: two durable positions of one topic
// (two services) share a dead-letter topic, and both give up on the same
// value. Each DeadLetter call returns nil, so each Pool counts the value
// dead-lettered and acknowledges it: the dead-letter topic must then hold
// both dead letters, each with its own error, not one dropped as a
// duplicate of the other.
func TestDeadLettersOfTwoDurablesBothKept(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "dl.orders", natsbridge.TopicOptions{})
	dlq := newTopicOf(t, js, "dl.orders.dead", natsbridge.JSON[natsbridge.DeadLetter](), natsbridge.TopicOptions{})
	billing := watch(t, topic, natsbridge.WatchOptions{Durable: "billing", From: 1, DeadLetters: dlq})
	shipping := watch(t, topic, natsbridge.WatchOptions{Durable: "shipping", From: 1, DeadLetters: dlq})
	publishAll(t, topic, 1, 3)
	if err := billing.DeadLetter(testCtx(t), 2, handle.Failure{Err: errors.New("card declined"), Attempts: 5}); err != nil {
		t.Fatal(err)
	}
	if err := shipping.DeadLetter(testCtx(t), 2, handle.Failure{Err: errors.New("no such address"), Attempts: 5}); err != nil {
		t.Fatal(err)
	}
	got := deadLetters(t, dlq)
	var errs []string
	for _, d := range got {
		errs = append(errs, d.Error)
	}
	sort.Strings(errs)
	if len(errs) != 2 || errs[0] != "card declined" || errs[1] != "no such address" {
		t.Errorf("the dead-letter topic holds %q; want both services' dead letters of seq 2", errs)
	}
}

// TestRedriveAfterDeadLetterTopicRecreated: a dead-letter topic deleted
// and made again numbers its dead letters from 1 again. A Redrive of the
// new dead letter must publish it back to its topic, not have it dropped
// as a copy of the value an earlier Redrive published from the old
// topic's dead letter 1, and then remove it: that would lose it.
func TestRedriveAfterDeadLetterTopicRecreated(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "dl.redrive", natsbridge.TopicOptions{})
	dlq := newTopicOf(t, js, "dl.redrive.dead", natsbridge.JSON[natsbridge.DeadLetter](), natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "ship", From: 1, DeadLetters: dlq})
	publishAll(t, topic, 1, 3)
	if err := w.DeadLetter(testCtx(t), 1, handle.Failure{Err: errors.New("first"), Attempts: 1}); err != nil {
		t.Fatal(err)
	}
	if rs, err := natsbridge.Redrive(testCtx(t), dlq, nil); err != nil || rs.Redriven != 1 {
		t.Fatalf("first Redrive = %+v, %v", rs, err)
	}
	// The operator empties the dead-letter topic by deleting it; it is
	// made again.
	if err := dlq.Delete(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	dlq2 := newTopicOf(t, js, "dl.redrive.dead", natsbridge.JSON[natsbridge.DeadLetter](), natsbridge.TopicOptions{})
	w2 := watch(t, topic, natsbridge.WatchOptions{Durable: "ship2", From: 1, DeadLetters: dlq2})
	if err := w2.DeadLetter(testCtx(t), 3, handle.Failure{Err: errors.New("second"), Attempts: 1}); err != nil {
		t.Fatal(err)
	}
	if rs, err := natsbridge.Redrive(testCtx(t), dlq2, nil); err != nil || rs.Redriven != 1 {
		t.Fatalf("second Redrive = %+v, %v", rs, err)
	}
	// The topic held 1..3, then value 1 redriven (4); value 3 redriven
	// must be 5.
	got := ids(storedFrom(t, topic, 4))
	if len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Errorf("redriven values in the topic: %v, want [1 3]: the second Redrive removed its dead letter without storing it", got)
	}
	if left := deadLetters(t, dlq2); len(left) != 0 {
		t.Errorf("%d dead letters left", len(left))
	}
}

// TestRedriveTwiceAtOnce: two Redrives of one dead-letter topic at once
// publish each dead letter back once, leave none, and count each redriven
// once between them.
func TestRedriveTwiceAtOnce(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "dl.twice", natsbridge.TopicOptions{})
	dlq := newTopicOf(t, js, "dl.twice.dead", natsbridge.JSON[natsbridge.DeadLetter](), natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "ship", From: 1, DeadLetters: dlq})
	const n = 50
	publishAll(t, topic, 1, n)
	for seq := uint64(1); seq <= n; seq++ {
		if err := w.DeadLetter(testCtx(t), seq, handle.Failure{Err: errors.New("no"), Attempts: 1}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var total atomic.Uint64
	for range 2 {
		wg.Go(func() {
			rs, err := natsbridge.Redrive(testCtx(t), dlq, nil)
			if err != nil {
				t.Error(err)
			}
			total.Add(rs.Redriven)
		})
	}
	wg.Wait()
	got := ids(storedFrom(t, topic, n+1))
	sort.Ints(got)
	if !slices.Equal(got, span(1, n)) {
		t.Errorf("redriven into the topic: %v, want 1..%d once each", got, n)
	}
	if left := deadLetters(t, dlq); len(left) != 0 {
		t.Errorf("%d dead letters left", len(left))
	}
	if got := total.Load(); got != n {
		t.Errorf("two Redrives at once counted %d redriven for %d dead letters, want each counted once", got, n)
	}
}

// TestRedriveOfADeadLetterWithoutData: a dead letter whose value
// retention had removed before it was given up carries no bytes. Redrive
// must not publish an empty message in its place (a poison message for
// every reader of the topic).
func TestRedriveOfADeadLetterWithoutData(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "dl.nodata", natsbridge.TopicOptions{})
	dlq := newTopicOf(t, js, "dl.nodata.dead", natsbridge.JSON[natsbridge.DeadLetter](), natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "ship", From: 1, DeadLetters: dlq})
	publishAll(t, topic, 1, 2)
	stream, err := js.Stream(testCtx(t), topic.Stream())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.DeleteMsg(testCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	if err := w.DeadLetter(testCtx(t), 1, handle.Failure{Err: errors.New("no"), Attempts: 1}); err != nil {
		t.Fatal(err)
	}
	rs, err := natsbridge.Redrive(testCtx(t), dlq, nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.LastSeq != 2 {
		msg, _ := stream.GetMsg(testCtx(t), info.State.LastSeq)
		t.Errorf("Redrive = %+v and published %q at %d: a dead letter without its bytes became an empty message", rs, msg.Data, info.State.LastSeq)
	}
	if rs.Gone != 1 || rs.Redriven != 0 {
		t.Errorf("Redrive = %+v, want the dead letter counted Gone and left in its topic", rs)
	}
}
