package natsbridge

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/heraldgo/herald/natsbridge/internal/ring"
)

// entry is one accepted value: its message, sent as it is each time (its
// reply subject aside), until the stream confirms it.
type entry struct {
	msg   nats.Msg
	bseq  uint64    // its sequence in the current batch; 0 if not sent in it
	sends int       // how many times it went on the wire
	added time.Time // when it was accepted: its delivery deadline counts from here
}

// phase is where the current batch stands.
type phase int

const (
	phaseIdle     phase = iota // no batch: the next send starts one
	phaseStarting              // a batch's first message is out, its first answer awaited
	phaseOpen                  // values flow, as fast as the server's flow acks allow
	phaseEnding                // the batch ends (a commit sent, a gap or refusal reported): its final ack awaited
	phasePinging               // a ping asks where the batch stands
	phaseWaiting               // nothing took the batch's messages: wait, then look again
)

// linkConfig is what a link takes from PublisherOptions and the topic.
type linkConfig struct {
	inbox, batchPrefix string
	interval           uint64        // the flow ack interval asked for
	ackTimeout         time.Duration // an open batch silent this long is pinged
	probeTimeout       time.Duration // a start, ping or commit unanswered this long is sent again
	maxBackoff         time.Duration // the longest wait after "no responders"
	linger             time.Duration // an open batch with nothing to send this long is committed
	deliveryTimeout    time.Duration // a value unconfirmed this long fails; 0: never
}

// failure is a value the link gave up on, for the publisher to log.
type failure struct {
	err   error
	sends int
}

// send is one message a link wants on the wire, in order: a value (e) or a
// control message (a commit or a ping).
type send struct {
	e     *entry
	reply string
	batch string
}

// link is a publisher's state: the values it holds, oldest first, and the
// fast batch that carries them to the stream. It is a plain state machine,
// driven by the publisher under its mutex with the time passed in: plan
// says what to send (here), reply takes the server's answers
// (link_reply.go), tick the passing of time (link_time.go). It never
// blocks and never touches the network.
//
// Order: a batch starts only when no value is in flight in another one, and
// its first value is the oldest unconfirmed; the stream stores a batch's
// values only in order, and drops those it holds already (the message id).
// So the stream stores the publisher's values in the order they were
// accepted, each once, whatever is lost, resent or failed over on the way.
type link struct {
	cfg   linkConfig
	ring  ring.Ring[*entry] // accepted, unsettled values, oldest first; the first sent are sent in the batch
	sent  int
	stats counters

	batch    string // the current batch's id, "" in phaseIdle
	batches  uint64 // batches begun, for ids
	replies  replySubjects
	phase    phase
	seq      uint64 // the last sequence used in the batch
	acked    uint64 // every value of the batch up to here is stored
	interval uint64 // the server's flow ack interval
	since    time.Time
	progress time.Time // the last answer or ack that moved things on
	lastSend time.Time
	ctl      int    // a control message to send: opCommit, opPing, or -1
	lone     bool   // the batch is one value, sent with its commit
	refusedS uint64 // a value of the batch the stream refused, or 0
	refusedE error

	backoff         time.Duration
	noLeader        int  // consecutive "no responders" answers
	checkStream     bool // the publisher should ask whether the stream exists
	stalled         bool // the connection could not take a message: plan again soon
	closing, closed bool // Shutdown has begun; nothing more can be sent

	freed    int // settled values whose slot the publisher is to free
	failures []failure
}

func newLink(cfg linkConfig) *link { return &link{cfg: cfg, ctl: -1} }

// accept takes a new value.
func (l *link) accept(e *entry) {
	l.ring.Push(e)
	l.stats.published++
}

// pending returns how many accepted values are unsettled.
func (l *link) pending() int { return l.ring.Len() }

// done reports whether a publisher shutting down may stop: every value is
// settled, and the batch's end (which tells the stream sequence of its last
// value, PublisherStats.LastSeq) is not awaited, or was awaited for a probe
// timeout already.
func (l *link) done() bool {
	if l.ring.Len() > 0 {
		return false
	}
	switch l.phase {
	case phaseIdle, phaseWaiting, phasePinging:
		return true
	}
	return l.closed
}

// plan appends to out what to send now, in order, as if sent: the
// publisher sends it, or reports what it could not with unsend.
func (l *link) plan(now time.Time, out []send) []send {
	if l.closed {
		return out
	}
	switch l.phase {
	case phaseIdle:
		if l.ring.Len() > 0 {
			// A value alone is a batch of its own, acked at once; with
			// more behind it, it opens a batch for them.
			op := opStart
			l.begin(now)
			if l.ring.Len() == 1 {
				op, l.lone = opCommitValue, true
			}
			out = append(out, l.sendValue(now, op))
			l.enter(phaseStarting, now)
		}
	case phaseOpen:
		limit := l.acked + l.interval*maxOutstandingAcks
		for l.sent < l.ring.Len() && l.seq < limit {
			out = append(out, l.sendValue(now, opAppend))
		}
	}
	switch l.ctl {
	case opCommit:
		l.seq++
		out = append(out, send{reply: l.replies.subject(l.seq, opCommit), batch: l.batch})
	case opPing:
		out = append(out, send{reply: l.replies.subject(l.seq, opPing), batch: l.batch})
	}
	l.ctl = -1
	return out
}

// begin opens a new batch; every value is unsent.
func (l *link) begin(now time.Time) {
	l.batches++
	l.batch = fmt.Sprintf("%s%d", l.cfg.batchPrefix, l.batches)
	l.replies = newReplySubjects(l.cfg.inbox, l.batch, l.cfg.interval)
	l.seq, l.acked, l.interval, l.refusedS, l.lone = 0, 0, 1, 0, false
	l.progress = now
}

// sendValue plans the next unsent value.
func (l *link) sendValue(now time.Time, op int) send {
	e := l.ring.At(l.sent)
	if l.sent == 0 {
		l.progress = now // acks are awaited from now
	}
	l.sent++
	l.seq++
	e.bseq = l.seq
	if e.sends > 0 {
		l.stats.retries++
	}
	e.sends++
	l.lastSend = now
	return send{e: e, reply: l.replies.subject(l.seq, op), batch: l.batch}
}

func (l *link) enter(p phase, now time.Time) {
	l.phase, l.since = p, now
}

// unsend takes back sends the publisher could not make (they went nowhere),
// in the order planned: the first failed and everything after it.
func (l *link) unsend(failed []send) {
	for i := len(failed) - 1; i >= 0; i-- {
		s := failed[i]
		if s.e != nil {
			s.e.sends--
			if s.e.sends > 0 {
				l.stats.retries--
			}
		}
		if s.batch != l.batch {
			continue // that batch is over: its values were taken back already
		}
		switch {
		case s.e != nil && s.e.bseq == l.seq:
			s.e.bseq = 0
			l.sent--
			l.seq--
		case s.e == nil && l.phase == phaseEnding && l.ctl == -1:
			l.ctl = opCommit // a commit that went nowhere: once more
			l.seq--
		}
	}
	if l.phase == phaseStarting && l.sent == 0 {
		l.reset() // the first message went nowhere: start again
	}
}

// reset forgets the current batch: every value is unsent.
func (l *link) reset() {
	for i := range l.sent {
		l.ring.At(i).bseq = 0
	}
	l.sent, l.batch, l.phase, l.ctl = 0, "", phaseIdle, -1
}

// settle removes the front value, counted by the caller.
func (l *link) settle() *entry {
	e := l.ring.Pop()
	if e.bseq != 0 {
		l.sent--
	}
	l.freed++
	return e
}

// confirm settles every sent value stored up to seq.
func (l *link) confirm(seq uint64, now time.Time) {
	if seq > l.acked {
		l.acked = seq
		l.progress = now
	}
	for l.sent > 0 && l.ring.At(0).bseq <= seq {
		l.settle()
		l.stats.confirmed++
	}
}

// fail settles the front value as failed.
func (l *link) fail(err error) {
	e := l.settle()
	l.stats.failed++
	l.failures = append(l.failures, failure{err: err, sends: e.sends})
}

// failAll fails every value held.
func (l *link) failAll(err error) {
	for l.ring.Len() > 0 {
		l.fail(err)
	}
}

// abandon settles every value held as unconfirmed: a Shutdown gave up, or
// the connection closed.
func (l *link) abandon() {
	for l.ring.Len() > 0 {
		l.settle()
		l.stats.unconfirmed++
	}
	l.reset()
}

// streamGone fails every value held: the stream was deleted.
func (l *link) streamGone(err error) {
	l.reset()
	l.failAll(err)
}
