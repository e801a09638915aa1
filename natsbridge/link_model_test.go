package natsbridge

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A model of the server's side of fast batches ("gap: fail"), as
// nats-server 2.15 runs them, to drive a link through losses, "no
// responders", lost answers, leader changes and expired batches, and to
// check what the stream ends up holding. It follows the server's rules
// that the link relies on:
//
//   - a batch begins at sequence 1 and stores each value only right after
//     the one before; a sequence out of place ends it ("gap"), with a pub
//     ack that counts what it stored;
//   - a value whose message id the stream holds is skipped, not stored (a
//     batch that begins with one ends at once with a pub ack of 1);
//   - a flow ack comes every interval values stored, and in answer to a
//     ping that finds no gap; a commit (with a last value or without), or
//     a ping that finds a gap, ends the batch with a pub ack;
//   - an unknown batch (ended, expired, never begun) answers with an
//     error; without a leader nothing answers but "no responders";
//   - a new leader keeps every batch's position and sends each a flow ack;
//   - a message may be held up on another path (an old connection, a
//     route) and arrive after messages sent later.
type model struct {
	t        *testing.T
	interval uint64
	stored   []string           // message ids, in stream order
	held     map[string]bool    // message ids the stream holds
	batches  map[string]*mbatch // open batches
	wire     []send             // sent, not yet taken by the server (one connection: in order)
	replies  []reply            // answers on their way back
	values   map[*entry]string  // each value's message id
	noLeader bool
}

type mbatch struct {
	lseq, fseq uint64
	reply      string // the last message's reply subject: where a new leader writes
}

func newModel(t *testing.T, interval uint64) *model {
	return &model{t: t, interval: interval, held: map[string]bool{}, batches: map[string]*mbatch{}, values: map[*entry]string{}}
}

// take lets the server take the next message off the wire; lost drops it
// instead.
func (m *model) take(lost bool) {
	if len(m.wire) == 0 {
		return
	}
	s := m.wire[0]
	m.wire = m.wire[1:]
	if lost {
		return
	}
	batch, seq, op := parseSubject(m.t, s.reply)
	ans := func(r reply) {
		r.batch, r.seq, r.op = batch, seq, op
		m.replies = append(m.replies, r)
	}
	if m.noLeader {
		ans(reply{kind: replyNoResponders})
		return
	}
	b := m.batches[batch]
	if b == nil {
		if (op != opStart && op != opCommitValue) || seq != 1 {
			ans(reply{kind: replyError, err: &jetstream.APIError{Code: 400, ErrorCode: errCodeUnknownBatch}})
			return
		}
		b = &mbatch{}
		m.batches[batch] = b
	}
	b.reply = s.reply
	end := func() {
		ans(reply{kind: replyPubAck, count: b.lseq, streamSeq: uint64(len(m.stored))})
		delete(m.batches, batch)
	}
	switch {
	case op == opPing:
		if seq > b.lseq {
			ans(reply{kind: replyGap})
			end()
			return
		}
		ans(reply{kind: replyFlowAck, ackSeq: b.fseq, interval: m.interval})
		return
	case seq != b.lseq+1:
		ans(reply{kind: replyGap})
		end()
		return
	case op == opCommit:
		end()
		return
	}
	b.lseq++
	id := m.values[s.e]
	if m.held[id] {
		if b.lseq == 1 {
			end() // a batch that begins with a value held already
		}
		return
	}
	m.held[id] = true
	m.stored = append(m.stored, id)
	if op == opCommitValue {
		end()
		return
	}
	if b.lseq == 1 {
		ans(reply{kind: replyFlowAck, ackSeq: 0, interval: m.interval})
	}
	if b.lseq >= b.fseq+m.interval {
		b.fseq = b.lseq
		ans(reply{kind: replyFlowAck, ackSeq: b.fseq, interval: m.interval})
	}
}

// newLeader is an election: every batch keeps its position, and hears a
// flow ack at its last reply subject.
func (m *model) newLeader() {
	m.noLeader = false
	for id, b := range m.batches {
		batch, seq, op := parseSubject(m.t, b.reply)
		_ = id
		m.replies = append(m.replies, reply{batch: batch, seq: seq, op: op, kind: replyFlowAck, ackSeq: b.lseq, interval: m.interval})
		b.fseq = b.lseq
	}
}

func parseSubject(t *testing.T, subject string) (batch string, seq uint64, op int) {
	f := strings.Split(strings.TrimPrefix(subject, "_INBOX.test."), ".")
	if len(f) != 6 {
		t.Fatalf("reply subject %q", subject)
	}
	_, err := fmt.Sscan(f[3], &seq)
	if err != nil {
		t.Fatal(err)
	}
	return f[0], seq, int(f[4][0] - '0')
}

// FuzzLinkStoresInOrder drives a link against the model through faults
// chosen by the input, then lets it heal: every value accepted is
// confirmed, and the stream holds each once, in the order accepted.
func FuzzLinkStoresInOrder(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte("a steady stream, then losses"))
	f.Add([]byte{7, 7, 7, 7, 200, 201, 202, 9, 9, 9, 250, 3, 3, 3, 3})
	f.Add(slices.Repeat([]byte{11, 0, 23, 200, 5}, 40))
	f.Fuzz(func(t *testing.T, in []byte) {
		runModel(t, in)
	})
}

// TestLinkStoresInOrder runs the model over a range of fault patterns
// (the fuzz target's seeds and more).
func TestLinkStoresInOrder(t *testing.T) {
	for i := range 300 {
		in := make([]byte, 256)
		x := uint64(i)*0x9E3779B97F4A7C15 + 1
		for j := range in {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			in[j] = byte(x)
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) { runModel(t, in) })
	}
}

func runModel(t *testing.T, in []byte) {
	const values = 60
	interval := uint64(1 + len(in)%7)
	m := newModel(t, interval)
	l := newLink(linkConfig{
		inbox: "_INBOX.test", batchPrefix: "b", interval: interval,
		ackTimeout: time.Second, probeTimeout: 300 * time.Millisecond,
		maxBackoff: 200 * time.Millisecond, linger: 5 * time.Millisecond,
	})
	now := time.Unix(1_000_000, 0)
	var accepted []string
	next := func() byte {
		if len(in) == 0 {
			return 0
		}
		b := in[0]
		in = in[1:]
		return b
	}
	valueSends := 0
	send := func() {
		for _, s := range l.plan(now, nil) {
			if s.e != nil {
				valueSends++
			}
			m.wire = append(m.wire, s)
		}
	}
	deliver := func(lose bool) {
		if len(m.replies) == 0 {
			return
		}
		r := m.replies[0]
		m.replies = m.replies[1:]
		if !lose {
			l.reply(r, now)
		}
	}
	// The faulty phase.
	for len(in) > 0 || len(accepted) < values {
		c := next()
		switch {
		case len(accepted) < values && c%4 == 0:
			e := &entry{added: now}
			id := fmt.Sprintf("id%d", len(accepted)+1)
			m.values[e] = id
			accepted = append(accepted, id)
			l.accept(e)
		case c%16 == 1:
			m.take(true) // a message lost on the way
		case c%16 == 2:
			deliver(true) // an answer lost on the way
		case c%32 == 3:
			m.noLeader = true
		case c%32 == 19:
			if m.noLeader {
				m.newLeader()
			}
		case c%64 == 5:
			clear(m.batches) // every batch expires (or the stream's state is lost)
		case c%64 == 37 && len(m.wire) > 1:
			// A message held up on another path (an old connection, a
			// route) arrives after those sent later.
			m.wire = append(m.wire[1:], m.wire[0])
		case c%8 == 6:
			now = now.Add(time.Duration(binary.BigEndian.Uint16([]byte{next(), next()})) * time.Millisecond / 64)
			l.tick(now)
		case c%2 == 1:
			m.take(false)
		default:
			deliver(false)
		}
		send()
	}
	// Healing: a leader, nothing lost, time passing.
	if m.noLeader {
		m.newLeader()
	}
	for step := 0; l.pending() > 0; step++ {
		if step > 100000 {
			t.Fatalf("the link did not settle: %d values pending, phase %d, wire %d, replies %d", l.pending(), l.phase, len(m.wire), len(m.replies))
		}
		switch {
		case len(m.wire) > 0:
			m.take(false)
		case len(m.replies) > 0:
			deliver(false)
		default:
			now = l.next(now)
			l.tick(now)
		}
		send()
	}
	if diff := slices.Compare(m.stored, accepted); diff != 0 {
		t.Fatalf("the stream holds %v\nwant, in order, once each: %v", m.stored, accepted)
	}
	st := l.stats
	if st.published != values || st.confirmed != values || st.failed != 0 || st.unconfirmed != 0 {
		t.Fatalf("counters %+v, want %d published and confirmed", st, values)
	}
	if uint64(valueSends) != st.published+st.retries {
		t.Fatalf("%d values sent, the link counts %d + %d retries", valueSends, st.published, st.retries)
	}
}
