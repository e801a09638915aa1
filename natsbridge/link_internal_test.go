package natsbridge

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"
)

// Tests of the link's rules one at a time, with time passed in; the model
// (link_model_test.go) checks what they add up to.

var t0 = time.Unix(1_000_000, 0)

func testLink() *link {
	return newLink(linkConfig{
		inbox: "_INBOX.test", batchPrefix: "b", interval: 2,
		ackTimeout: time.Second, probeTimeout: 300 * time.Millisecond,
		maxBackoff: 200 * time.Millisecond, linger: 5 * time.Millisecond,
		deliveryTimeout: time.Minute,
	})
}

// ops lists what a plan sends: "v<bseq>/<op>" for a value, "c<seq>/<op>"
// for a control message.
func ops(t *testing.T, sends []send) []string {
	var out []string
	for _, s := range sends {
		_, seq, op := parseSubject(t, s.reply)
		kind := "c"
		if s.e != nil {
			kind = "v"
		}
		out = append(out, kind+itoa(int(seq))+"/"+itoa(op))
	}
	return out
}

func itoa(n int) string { return string(rune('0'+n/10%10)) + string(rune('0'+n%10)) }

func acceptN(l *link, n int, now time.Time) {
	for range n {
		l.accept(&entry{added: now})
	}
}

func planned(t *testing.T, l *link, now time.Time, want ...string) {
	t.Helper()
	if diff := cmp.Diff(want, ops(t, l.plan(now, nil))); diff != "" {
		t.Fatalf("plan (-want +got):\n%s", diff)
	}
}

// TestLinkStartWaitsForTheFirstAnswer: a batch sends its first value
// alone; the rest follow its first answer, as many as the flow allows
// (two intervals past the last ack).
func TestLinkStartWaitsForTheFirstAnswer(t *testing.T) {
	l := testLink()
	acceptN(l, 6, t0)
	planned(t, l, t0, "v01/00")
	planned(t, l, t0) // nothing before the answer
	l.reply(reply{batch: l.batch, kind: replyFlowAck, ackSeq: 0, interval: 2}, t0)
	planned(t, l, t0, "v02/01", "v03/01", "v04/01")
	l.reply(reply{batch: l.batch, kind: replyFlowAck, ackSeq: 2, interval: 2}, t0)
	if l.stats.confirmed != 2 || l.pending() != 4 {
		t.Fatalf("confirmed %d, pending %d; want 2, 4", l.stats.confirmed, l.pending())
	}
	planned(t, l, t0, "v05/01", "v06/01")
}

// TestLinkWaitsAfterNoResponders: a value nothing took is sent again
// in a new batch after a wait that doubles from 25ms up to maxBackoff, and
// counts as a retry.
func TestLinkWaitsAfterNoResponders(t *testing.T) {
	l := testLink()
	acceptN(l, 1, t0)
	now := t0
	var waits []time.Duration
	for range 5 {
		planned(t, l, now, "v01/02") // alone: a batch of one
		l.reply(reply{batch: l.batch, kind: replyNoResponders}, now)
		next := l.tick(now)
		planned(t, l, now) // waiting
		waits = append(waits, next.Sub(now))
		now = next
		l.tick(now)
	}
	want := []time.Duration{25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond}
	if diff := cmp.Diff(want, waits); diff != "" {
		t.Fatalf("waits (-want +got):\n%s", diff)
	}
	if l.stats.retries != 4 || l.batches != 5 {
		t.Fatalf("retries %d, batches %d; want 4, 5", l.stats.retries, l.batches)
	}
}

// TestLinkCommitsWhenIdle: an open batch with nothing more to send is
// committed linger after its last send; the pub ack confirms its tail, and
// the next value starts a new batch.
func TestLinkCommitsWhenIdle(t *testing.T) {
	l := testLink()
	acceptN(l, 3, t0)
	planned(t, l, t0, "v01/00")
	l.reply(reply{batch: l.batch, kind: replyFlowAck, interval: 2}, t0)
	planned(t, l, t0, "v02/01", "v03/01")
	if next := l.tick(t0); !next.Equal(t0.Add(5 * time.Millisecond)) {
		t.Fatalf("next tick at %v, want linger after the last send", next.Sub(t0))
	}
	l.tick(t0.Add(5 * time.Millisecond))
	planned(t, l, t0, "c04/03")
	l.reply(reply{batch: l.batch, kind: replyPubAck, count: 3, streamSeq: 42}, t0)
	if l.stats.confirmed != 3 || l.stats.lastSeq != 42 || l.phase != phaseIdle {
		t.Fatalf("confirmed %d, lastSeq %d, phase %d; want 3, 42, idle", l.stats.confirmed, l.stats.lastSeq, l.phase)
	}
	acceptN(l, 2, t0)
	planned(t, l, t0, "v01/00")
}

// TestLinkPingsWhenAcksAreLate: values in flight with no answer for
// AckTimeout make the link ask where the batch stands; an answer to the
// ping without a gap resumes it; a gap ends it, and the values it did not
// store go again, in order, in a new batch.
func TestLinkPingsWhenAcksAreLate(t *testing.T) {
	l := testLink()
	acceptN(l, 4, t0)
	planned(t, l, t0, "v01/00")
	l.reply(reply{batch: l.batch, kind: replyFlowAck, interval: 2}, t0)
	planned(t, l, t0, "v02/01", "v03/01", "v04/01")
	late := t0.Add(time.Second)
	l.tick(late)
	planned(t, l, late, "c04/04")
	l.reply(reply{batch: l.batch, op: opPing, kind: replyFlowAck, ackSeq: 2, interval: 2}, late)
	if l.phase != phaseOpen || l.stats.confirmed != 2 {
		t.Fatalf("phase %d, confirmed %d after the ping's answer; want open, 2", l.phase, l.stats.confirmed)
	}
	later := late.Add(time.Second)
	l.tick(later)
	planned(t, l, later, "c04/04")
	old := l.batch
	l.reply(reply{batch: old, op: opPing, kind: replyGap}, later)
	l.reply(reply{batch: old, op: opPing, kind: replyPubAck, count: 3}, later)
	planned(t, l, later, "v01/02")
	if l.stats.confirmed != 3 || l.stats.retries != 1 || l.batch == old {
		t.Fatalf("confirmed %d, retries %d; want 3, 1, in a new batch", l.stats.confirmed, l.stats.retries)
	}
}

// TestLinkFailsRefusedValue: a value the stream refuses fails, logged with
// the server's error; the values after it go on.
func TestLinkFailsRefusedValue(t *testing.T) {
	l := testLink()
	acceptN(l, 3, t0)
	planned(t, l, t0, "v01/00")
	l.reply(reply{batch: l.batch, kind: replyFlowAck, interval: 2}, t0)
	planned(t, l, t0, "v02/01", "v03/01")
	refused := &jetstream.APIError{Code: 400, ErrorCode: 10054, Description: "message size exceeds maximum allowed"}
	l.reply(reply{batch: l.batch, kind: replyRefused, refused: 2, err: refused}, t0)
	l.reply(reply{batch: l.batch, kind: replyPubAck, count: 1}, t0)
	if l.stats.confirmed != 1 || l.stats.failed != 1 || len(l.failures) != 1 || !errors.Is(l.failures[0].err, refused) {
		t.Fatalf("confirmed %d, failed %d, failures %v; want 1, 1, the server's error", l.stats.confirmed, l.stats.failed, l.failures)
	}
	planned(t, l, t0, "v01/02") // the third value, alone in a new batch
}

// TestLinkStartRefusedOrHeld: a first value the stream holds already ends
// its batch with a pub ack of one: confirmed; one it refuses fails; a
// stream that is gone fails everything held.
func TestLinkStartRefusedOrHeld(t *testing.T) {
	l := testLink()
	acceptN(l, 3, t0)
	planned(t, l, t0, "v01/00")
	l.reply(reply{batch: l.batch, kind: replyPubAck, count: 1, streamSeq: 7}, t0) // a duplicate
	planned(t, l, t0, "v01/00")
	l.reply(reply{batch: l.batch, kind: replyError, err: &jetstream.APIError{Code: 400, ErrorCode: 10060, Description: "expected stream does not match"}}, t0)
	planned(t, l, t0, "v01/02")
	l.reply(reply{batch: l.batch, kind: replyError, err: &jetstream.APIError{Code: 404, ErrorCode: errCodeStreamNotFound}}, t0)
	if l.stats.confirmed != 1 || l.stats.failed != 2 || l.pending() != 0 {
		t.Fatalf("confirmed %d, failed %d, pending %d; want 1, 2, 0", l.stats.confirmed, l.stats.failed, l.pending())
	}
	if !errors.Is(l.failures[1].err, ErrStreamGone) {
		t.Fatalf("a value sent to a stream that is gone failed with %v, want ErrStreamGone", l.failures[1].err)
	}
}

// TestLinkDeliveryTimeout: a value not confirmed within the delivery
// timeout fails, in order, whatever the batch is doing.
func TestLinkDeliveryTimeout(t *testing.T) {
	l := testLink()
	acceptN(l, 2, t0)
	acceptN(l, 1, t0.Add(30*time.Second))
	planned(t, l, t0, "v01/00")
	l.reply(reply{batch: l.batch, kind: replyNoResponders}, t0)
	l.tick(t0.Add(time.Minute))
	if l.stats.failed != 2 || l.pending() != 1 {
		t.Fatalf("failed %d, pending %d a minute on; want 2, 1", l.stats.failed, l.pending())
	}
}

// TestLinkUnsend: sends the connection refused are taken back, so that the
// batch goes on without a gap when they go again.
func TestLinkUnsend(t *testing.T) {
	l := testLink()
	acceptN(l, 3, t0)
	planned(t, l, t0, "v01/00")
	l.reply(reply{batch: l.batch, kind: replyFlowAck, interval: 2}, t0)
	sends := l.plan(t0, nil)
	l.unsend(sends[1:])
	if l.seq != 2 || l.sent != 2 || l.stats.retries != 0 {
		t.Fatalf("seq %d, sent %d, retries %d after taking back one send; want 2, 2, 0", l.seq, l.sent, l.stats.retries)
	}
	planned(t, l, t0, "v03/01")
}

// TestLinkLoneValue: a value with none behind it is a batch of its own,
// confirmed by one ack with its stream sequence; values accepted while it
// is in flight wait for that ack, then go in a batch together.
func TestLinkLoneValue(t *testing.T) {
	l := testLink()
	acceptN(l, 1, t0)
	planned(t, l, t0, "v01/02")
	acceptN(l, 2, t0)
	planned(t, l, t0) // the lone value's batch is not over
	l.reply(reply{batch: l.batch, kind: replyPubAck, count: 1, streamSeq: 9}, t0)
	if l.stats.confirmed != 1 || l.stats.lastSeq != 9 {
		t.Fatalf("confirmed %d, lastSeq %d; want 1, 9", l.stats.confirmed, l.stats.lastSeq)
	}
	planned(t, l, t0, "v01/00")
}
