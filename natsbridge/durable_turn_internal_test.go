package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A reader touches the durable consumer's turn (a reset, an unpin) only
// while the server serves it: a reset or an unpin lands on whoever holds
// the turn, and one from a reader that lost it without knowing (its lease
// ran out and it gave the turn up, the server served another since) would
// make the reader that holds it lose its acknowledgements and its turn,
// and the next reader read again what it had done.

// pinnedBy waits until the server serves a reader of the durable d, and
// returns its pin.
func pinnedBy(ctx context.Context, t *testing.T, topic *Topic[int], d string) string {
	t.Helper()
	for {
		pin, err := topic.pinnedNow(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if pin != "" {
			return pin
		}
		select {
		case <-ctx.Done():
			t.Fatal("no reader served")
		case <-time.After(5 * time.Millisecond): // a bounded poll of the server's state
		}
	}
}

// TestDurableHandBackUnderLostPinLeavesTheServedReader: a stopped reader
// handing its position back under a pin the server no longer serves (it
// serves another reader, a, in the middle of its read) neither puts the
// consumer back nor unpins it: a keeps its turn and its position, and
// reads every value once, none redelivered.
func TestDurableHandBackUnderLostPinLeavesTheServedReader(t *testing.T) {
	ctx, topic := ordersTopic(t)
	a, got := servedReader(ctx, t, topic, 10, 5)
	pin := pinnedBy(ctx, t, topic, "d")
	cons, err := topic.stream.Consumer(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	before := cons.CachedInfo().Delivered.Stream

	b, err := topic.Watch(ctx, WatchOptions{Durable: "d"})
	if err != nil {
		t.Fatal(err)
	}
	b.handBack(ctx, "a-pin-the-server-served-before")

	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if now := pinnedOf(info); now != pin {
		t.Errorf("the server serves %q after a hand-back under a lost pin, served %q: the reader reading was unpinned", now, pin)
	}
	if info.Delivered.Stream < before {
		t.Errorf("the consumer delivered up to %d, %d before a hand-back under a lost pin: it was put back under the reader reading", info.Delivered.Stream, before)
	}
	for range 5 {
		v, err := a.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(got, want) {
		t.Errorf("a read %v, want %v", got, want)
	}
	if st := a.Stats(); st.Redelivered != 0 {
		t.Errorf("a counted %d redelivered, want none", st.Redelivered)
	}
	a.Done(a.Seq()) // so that a's Stop does not wait for it
	b.Stop()
	a.Stop()
}

// TestDurableUnpinIfUnpinsOnlyThatPin: unpinIf under another pin than
// the one the server serves leaves the served reader pinned; under its
// own, it unpins it.
func TestDurableUnpinIfUnpinsOnlyThatPin(t *testing.T) {
	ctx, topic := ordersTopic(t)
	p := publisher(t, topic, PublisherOptions{})
	if err := p.Publish(ctx, 1); err != nil {
		t.Fatal(err)
	}
	w, err := topic.Watch(ctx, WatchOptions{Durable: "d", From: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := w.Next(ctx); err != nil {
		t.Fatal(err)
	}
	w.Done(w.Seq()) // so that its Stop does not wait for it
	pin := pinnedBy(ctx, t, topic, "d")
	if err := topic.unpinIf(ctx, "d", "another"); err != nil {
		t.Fatal(err)
	}
	if now, err := topic.pinnedNow(ctx, "d"); err != nil || now != pin {
		t.Fatalf("after unpinIf under another pin the server serves %q (%v), want %q", now, err, pin)
	}
	if err := topic.unpinIf(ctx, "d", pin); err != nil {
		t.Fatal(err)
	}
	if now, err := topic.pinnedNow(ctx, "d"); err != nil || now == pin {
		t.Fatalf("after unpinIf under its pin the server serves %q (%v), want it unpinned", now, err)
	}
}

// TestDurableGiveUpRetriesUnderTheLostPin: a reader whose lease ran out
// gives up the pin it held then; when the server does not answer, each
// retry gives up that pin, not one the reader was told of since; a reader
// that held no pin has nothing to give up; one that takes the position
// over again under a pin of its own gives nothing up.
func TestDurableGiveUpRetriesUnderTheLostPin(t *testing.T) {
	k := newKeeper(nil, "d", nil, "", 2*time.Second, newAcks(nil), newLimitedLog(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer k.g.Stop()
	var asked []string
	answer := errors.New("no server")
	k.unpin = func(_ context.Context, pin string) error {
		asked = append(asked, pin)
		return answer
	}
	k.mu.Lock()
	defer k.mu.Unlock()

	k.setPin("lost")
	k.giveTurnUpLocked(true)
	k.setPin("later") // a message under a new pin, before the reader takes the record
	k.giveTurnUpLocked(false)
	answer = nil
	k.giveTurnUpLocked(false)
	k.giveTurnUpLocked(false) // given up: nothing to retry
	if want := []string{"lost", "lost", "lost"}; !slices.Equal(asked, want) {
		t.Errorf("unpinned %q, want %q", asked, want)
	}
	if k.unpinDue {
		t.Error("still due to unpin after the server answered")
	}

	asked = nil
	k.setPin("")
	k.giveTurnUpLocked(true)
	if len(asked) != 0 || k.unpinDue {
		t.Errorf("a reader that held no pin unpinned %q (due %v)", asked, k.unpinDue)
	}

	answer = errors.New("no server")
	k.setPin("old")
	k.giveTurnUpLocked(true)
	k.ownLocked(record{}, record{Owner: "me"}, 1, time.Now())
	asked = nil
	k.giveTurnUpLocked(false)
	if len(asked) != 0 {
		t.Errorf("a reader that took the position over again unpinned %q", asked)
	}
}

// TestDurableStandbyResetsOnlyWhenNothingIsToDeliver: a standby puts the
// consumer back at its acknowledged position only when nobody is served,
// values wait for acks that will not come, and none waits to be
// delivered; with values to deliver, the server serves a standby itself.
func TestDurableStandbyResetsOnlyWhenNothingIsToDeliver(t *testing.T) {
	info := func(pin string, ackPending int, pending uint64) *jetstream.ConsumerInfo {
		return &jetstream.ConsumerInfo{
			NumAckPending:  ackPending,
			NumPending:     pending,
			PriorityGroups: []jetstream.PriorityGroupState{{Group: durableGroup, PinnedClientID: pin}},
		}
	}
	for _, c := range []struct {
		name string
		info *jetstream.ConsumerInfo
		want bool
	}{
		{"nobody served, values unacknowledged, none to deliver", info("", 3, 0), true},
		{"nobody served, values unacknowledged, more to deliver", info("", 3, 5), false},
		{"a reader served", info("p", 3, 0), false},
		{"nothing unacknowledged", info("", 0, 0), false},
	} {
		if got := standbyResets(c.info); got != c.want {
			t.Errorf("%s: standbyResets = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestDurableDeliveryUnderGivenAwayPinTakesNothingOver: a standby reader
// that finds, among the messages its client held, one delivered under a
// pin the server has given away since (it gave its turn up when its
// lease ran out, and the server serves another reader now) neither takes
// the position's record over nor puts the consumer back: the reader the
// server serves keeps its record, its deliveries and its turn.
func TestDurableDeliveryUnderGivenAwayPinTakesNothingOver(t *testing.T) {
	ctx, topic := ordersTopic(t)
	served, _ := servedReader(ctx, t, topic, 20, 5)
	pin := pinnedBy(ctx, t, topic, "d")
	cons, err := topic.stream.Consumer(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	before := cons.CachedInfo().Delivered
	rec, rev, err := served.d.keep.read(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// The feed of a standby of the same position: the message its client
	// held came under the pin it gave up.
	_, d, err := topic.bindDurable(ctx, WatchOptions{Durable: "d"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.keep.g.Stop()
	f := newFeed(topic, "watcher", 1, topic.newWatcher(1, WatchOptions{}, nil, d), d)
	late := &deliveryMsg{
		reply: fmt.Sprintf("$JS.ACK.%s.d.1.6.6.%d.0", topic.streamID, time.Now().UnixNano()),
		hdr:   nats.Header{pinHeader: []string{"given-up"}},
	}
	if err := f.consumeDurable(&oneDelivery{msg: late}, cons); !errors.Is(err, errNoMore) {
		t.Fatalf("consumeDurable = %v, want the iterator's end", err)
	}

	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if now := pinnedOf(info); now != pin {
		t.Errorf("the server serves %q, served %q before", now, pin)
	}
	if info.Delivered.Stream < before.Stream {
		t.Errorf("the consumer delivered up to %d, %d before: it was put back under the reader served", info.Delivered.Stream, before.Stream)
	}
	if now, nowRev, err := served.d.keep.read(ctx); err != nil || now.Owner != rec.Owner {
		t.Errorf("the record went from %+v (revision %d) to %+v (revision %d, %v): taken over", rec, rev, now, nowRev, err)
	}
	for range 15 {
		if _, err := served.Next(ctx); err != nil {
			t.Fatalf("the reader served: %v (Stats %+v)", err, served.Stats())
		}
	}
	if st := served.Stats(); st.Redelivered != 0 {
		t.Errorf("the reader served counted %d redelivered, want none", st.Redelivered)
	}
	served.Done(served.Seq())
	served.Stop()
}

// TestDurableFenceOnTimeWithServerGone: the active reader's keeper, its
// calls to the server unanswered (the server gone, the client waiting to
// reconnect), fences the reader at its lease's fence point, not a whole
// call's timeout later: the reader after it may start at the lease's end.
func TestDurableFenceOnTimeWithServerGone(t *testing.T) {
	ctx, topic, srv := ordersTopicOn(t)
	p := publisher(t, topic, PublisherOptions{})
	if err := p.Publish(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := topic.Watch(ctx, WatchOptions{Durable: "d", From: 1, Takeover: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Next(ctx); err != nil {
		t.Fatal(err)
	}
	k := w.d.keep
	srv.Shutdown() // every call from now on waits for its ctx
	k.mu.Lock()
	at := k.fenceAt() // the lease cannot be renewed any more
	k.mu.Unlock()
	for !k.fenced.Load() {
		if time.Now().After(at.Add(3 * time.Second)) {
			t.Fatalf("not fenced 3s after its fence point")
		}
		time.Sleep(5 * time.Millisecond) // a bounded poll of the keeper's state
	}
	if late := time.Since(at); late > 400*time.Millisecond {
		t.Errorf("fenced %v after its fence point: a call to the gone server held it back", late.Round(time.Millisecond))
	}
	w.Done(w.Seq())
	_ = w.Shutdown(ctx)
}

// TestDurableHandOutPastTheLeaseFences: a reader whose lease ran out
// while nothing ran its keeper (its process stopped, then went on) hands
// out nothing more, though the value is within its reservation: it is
// fenced at the hand-out, as the keeper would fence it, and gives its
// turn up under the pin it held at its next check. One whose lease runs
// on hands out.
func TestDurableHandOutPastTheLeaseFences(t *testing.T) {
	k := newKeeper(nil, "d", nil, "", 2*time.Second, newAcks(nil), newLimitedLog(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer k.g.Stop()
	var asked []string
	k.unpin = func(_ context.Context, pin string) error {
		asked = append(asked, pin)
		return nil
	}
	now := time.Now()
	k.mu.Lock()
	k.ownLocked(record{}, record{Owner: "me", Until: now.Add(2 * time.Second).UnixNano()}, 1, now)
	k.reserved.Advance(10)
	k.setPin("mine")
	k.mu.Unlock()
	if err := k.reserve(context.Background(), 5); err != nil {
		t.Fatalf("a hand-out within the lease = %v, want nil", err)
	}

	k.mu.Lock()
	k.setUntilLocked(now.Add(-time.Second), now.Add(-3*time.Second)) // its last renewal, 3 s ago
	k.mu.Unlock()
	if err := k.reserve(context.Background(), 6); !errors.Is(err, errFenced) {
		t.Fatalf("a hand-out past the lease's fence point = %v, want errFenced", err)
	}
	if !k.fenced.Load() {
		t.Error("not fenced")
	}
	k.lease(time.Now()) // the keeper's next check
	if want := []string{"mine"}; !slices.Equal(asked, want) {
		t.Errorf("gave up %q, want %q", asked, want)
	}
}
