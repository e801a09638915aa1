package natsbridge

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// A reader fenced by a record it did not expect (another owner's, or
// lost) gives its turn up if the server still pins it, however long the
// read of the record took, and when the server does not answer the
// question: left pinned, its feed renewing the pin, the position would
// wait for the ack wait (an hour) before any reader handed out again.

// slowOtherKV answers a read of the record with a record of another
// owner once the read's ctx has ended: a read that took the reader's
// time up to its fence point (the bucket made again, say).
type slowOtherKV struct{ jetstream.KeyValue }

func (s slowOtherKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	<-ctx.Done()
	b, err := json.Marshal(record{Owner: "another"})
	return otherEntry{value: b}, err
}

// otherEntry is a record's entry with value at revision 2.
type otherEntry struct {
	jetstream.KeyValueEntry
	value []byte
}

func (e otherEntry) Value() []byte    { return e.value }
func (e otherEntry) Revision() uint64 { return 2 }

// TestDurableFencedAfterASlowReadGivesItsTurnUp: the active reader's
// keeper, its lease write refused, reads a record of another owner with
// no time left before its fence point: it is fenced, and the server no
// longer serves its pin.
func TestDurableFencedAfterASlowReadGivesItsTurnUp(t *testing.T) {
	ctx, topic := ordersTopic(t)
	w, _ := servedReader(ctx, t, topic, 10, 5)
	pin := pinnedBy(ctx, t, topic, "d")
	k := w.d.keep

	k.mu.Lock()
	kv := k.kv
	k.kv = slowOtherKV{kv}
	rctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	k.refusedLocked(rctx)
	cancel()
	k.kv = kv
	k.mu.Unlock()

	if !k.fenced.Load() {
		t.Fatal("not fenced by a record of another owner")
	}
	if now, err := topic.pinnedNow(ctx, "d"); err != nil || now == pin {
		t.Errorf("the server serves %q (%v) after the fenced reader gave its turn up under %q: the position waits for the ack wait", now, err, pin)
	}
	w.Done(w.Seq()) // so that its Stop does not wait for it
	w.Stop()
}

// pinAnswer stands for the consumer's pull endpoint at subject: it
// answers each request with a 423 (another reader is pinned) if taken,
// with no message otherwise (the pin is the asker's).
func pinAnswer(t *testing.T, nc *nats.Conn, subject string, taken bool) {
	t.Helper()
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		r := nats.NewMsg(m.Reply)
		if taken {
			r.Header.Set("Status", "423")
		} else {
			r.Header.Set("Status", "404")
		}
		_ = m.RespondMsg(r)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestDurableFencedUnansweredGivesItsTurnUpAtTheNextCheck: a fenced
// reader whose question to the server goes unanswered gives its pin up
// at its next lease check (which unpins it if the server still pins it);
// one the server says is not pinned any more gives nothing up and stands
// by; one it says is pinned gives its pin up at once.
func TestDurableFencedUnansweredGivesItsTurnUpAtTheNextCheck(t *testing.T) {
	ctx, topic := ordersTopic(t)
	nc := topic.js.Conn()
	for _, c := range []struct {
		name   string
		answer func(t *testing.T, subject string) // nil: nobody answers (no responders)
		now    []string                           // unpinned at once
		check  []string                           // unpinned at the next lease check
		pin    string                             // the reader's pin after
	}{
		{name: "no responders", check: []string{"mine"}},
		{name: "another pinned", answer: func(t *testing.T, s string) { pinAnswer(t, nc, s, true) }},
		{name: "still pinned", answer: func(t *testing.T, s string) { pinAnswer(t, nc, s, false) }, now: []string{"mine"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			next := "herald.test.next." + nuid.Next()
			if c.answer != nil {
				c.answer(t, next)
			}
			k := newKeeper(slowOtherKV{}, "d", nc, next, 2*time.Second, newAcks(nil), newLimitedLog(slog.New(slog.NewTextHandler(io.Discard, nil))))
			defer k.g.Stop()
			var asked []string
			k.unpin = func(_ context.Context, pin string) error {
				asked = append(asked, pin)
				return nil
			}
			k.setPin("mine")
			rctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			k.mu.Lock()
			k.refusedLocked(rctx)
			k.mu.Unlock()
			cancel()
			if !k.fenced.Load() {
				t.Fatal("not fenced by a record of another owner")
			}
			if !slices.Equal(asked, c.now) {
				t.Errorf("unpinned %q at once, want %q", asked, c.now)
			}
			asked = nil
			k.lease(time.Now())
			if !slices.Equal(asked, c.check) {
				t.Errorf("unpinned %q at the next lease check, want %q", asked, c.check)
			}
			if p := *k.pin.Load(); p != c.pin {
				t.Errorf("pin %q after, want %q", p, c.pin)
			}
		})
	}
}

// TestDurablePingKeepsAPinSetMeanwhile: the keeper's ping goes out under
// the pin it knew; before its answer (a 423: the server serves another
// pin) the feed takes the position over under a new pin of this reader's.
// The answer about the old pin leaves the new one: a keeper that knew no
// pin would give nothing up when fenced, and its position would wait.
func TestDurablePingKeepsAPinSetMeanwhile(t *testing.T) {
	ctx, topic, srv := ordersTopicOn(t)
	nc := topic.js.Conn()
	next := "herald.test.next." + nuid.Next()
	asked, answer := make(chan struct{}), make(chan struct{})
	var first sync.Once
	sub, err := nc.Subscribe(next, func(m *nats.Msg) {
		first.Do(func() { close(asked) })
		<-answer
		r := nats.NewMsg(m.Reply)
		r.Header.Set("Status", "423")
		_ = m.RespondMsg(r)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	other, err := srv.Connect() // the answer is not queued behind the subscriber
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	k := newKeeper(nil, "d", other, next, 2*time.Second, newAcks(nil), newLimitedLog(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer k.g.Stop()
	k.setPin("old")
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = k.ping(ctx)
	}()
	<-asked
	k.setPin("new")
	close(answer)
	<-done
	if p := *k.pin.Load(); p != "new" {
		t.Errorf("the keeper knows pin %q after a ping under the old pin was answered 423; the feed set %q meanwhile", p, "new")
	}
	k.setPin("old")
	if mine, err := k.ping(ctx); mine || err != nil || *k.pin.Load() != "" {
		t.Errorf("a ping answered 423 under the pin the keeper knows: mine %v, err %v, pin %q after, want false, nil, \"\"", mine, err, *k.pin.Load())
	}
}
