package natsbridge

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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
// says what to send, reply takes the server's answers, tick the passing
// of time. It never blocks and never touches the network.
//
// Order: a batch starts only when no value is in flight in another one, and
// its first value is the oldest unconfirmed; the stream stores a batch's
// values only in order, and drops those it holds already (the message id).
// So the stream stores the publisher's values in the order they were
// accepted, each once, whatever is lost, resent or failed over on the way.
type link struct {
	cfg   linkConfig
	ring  fifo[*entry] // accepted, unsettled values; ring[:sent] are sent in the batch
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
	l.ring.push(e)
	l.stats.published++
}

// pending returns how many accepted values are unsettled.
func (l *link) pending() int { return l.ring.len() }

// done reports whether a publisher shutting down may stop: every value is
// settled, and the batch's end (which tells the stream sequence of its last
// value, PublisherStats.LastSeq) is not awaited, or was awaited for a probe
// timeout already.
func (l *link) done() bool {
	if l.ring.len() > 0 {
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
		if l.ring.len() > 0 {
			// A value alone is a batch of its own, acked at once; with
			// more behind it, it opens a batch for them.
			op := opStart
			l.begin(now)
			if l.ring.len() == 1 {
				op, l.lone = opCommitValue, true
			}
			out = append(out, l.sendValue(now, op))
			l.enter(phaseStarting, now)
		}
	case phaseOpen:
		limit := l.acked + l.interval*maxOutstandingAcks
		for l.sent < l.ring.len() && l.seq < limit {
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
	e := l.ring.at(l.sent)
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
		l.ring.at(i).bseq = 0
	}
	l.sent, l.batch, l.phase, l.ctl = 0, "", phaseIdle, -1
}

// settle removes the front value, counted by the caller.
func (l *link) settle() *entry {
	e := l.ring.pop()
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
	for l.sent > 0 && l.ring.at(0).bseq <= seq {
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

// reply takes an answer of the server.
func (l *link) reply(r reply, now time.Time) {
	if r.batch != l.batch || l.phase == phaseIdle {
		return // an answer about a batch that is over
	}
	switch r.kind {
	case replyNoResponders:
		l.noResponders(now)
	case replyFlowAck:
		l.flowAck(r, now)
	case replyGap:
		l.ending(now)
	case replyRefused:
		if r.err == nil || r.err.Code != 503 {
			l.refusedS, l.refusedE = r.refused, refusal(apiError(r.err))
		}
		l.ending(now)
	case replyPubAck:
		l.ended(r, now)
	case replyError:
		l.failed(apiError(r.err), now)
	}
}

// noResponders: nothing took a message of the batch. No stream has the
// subject now (no leader, or no stream): wait, then start again, or first
// ask where the batch stands if it may hold values.
func (l *link) noResponders(now time.Time) {
	if l.phase == phaseWaiting {
		return // another message of the same burst
	}
	if l.phase == phaseStarting {
		l.reset()
	}
	l.noLeader++
	l.checkStream = true
	l.backoff = min(max(2*l.backoff, 25*time.Millisecond), l.cfg.maxBackoff)
	l.enter(phaseWaiting, now)
	l.ctl = -1
}

func (l *link) flowAck(r reply, now time.Time) {
	l.noLeader, l.backoff = 0, 0
	l.interval = r.interval
	moved := r.ackSeq > l.acked
	l.confirm(r.ackSeq, now)
	l.progress = now
	switch {
	case l.phase == phaseOpen && r.op != opPing && !moved && l.sent > 0:
		// An ack that says nothing new, with values in flight: a new
		// leader saying where the batch stands, which may be short of
		// what was sent. Ask now rather than after AckTimeout.
		l.ping(now)
	case l.phase == phaseStarting && l.lone, l.phase == phasePinging && r.op == opPing && l.lone:
		// The batch of one is received; its ack comes when it is stored.
		l.enter(phaseEnding, now)
	case l.phase == phaseStarting:
		l.enter(phaseOpen, now)
	case l.phase == phasePinging && r.op == opPing:
		// No gap: the server has every message sent; acks follow.
		l.enter(phaseOpen, now)
	}
}

// ending: the server ends the batch (a gap, a refusal); its final ack
// follows.
func (l *link) ending(now time.Time) {
	if l.phase != phaseEnding {
		l.enter(phaseEnding, now)
	}
	l.ctl = -1
}

// ended: the batch is over, with its first count values stored. A value
// it refused is failed; the rest go in the next batch.
func (l *link) ended(r reply, now time.Time) {
	l.noLeader, l.backoff = 0, 0
	l.confirm(r.count, now)
	l.stats.lastSeq = max(l.stats.lastSeq, r.streamSeq)
	if l.refusedS != 0 && l.sent > 0 && l.ring.at(0).bseq == l.refusedS {
		l.fail(l.refusedE)
	}
	l.reset()
}

// failed: the batch ended, or never began, with err.
func (l *link) failed(err error, now time.Time) {
	switch {
	case err == nil:
		l.reset()
	case errCode(err) == errCodeStreamNotFound:
		l.reset()
		l.failAll(fmt.Errorf("%w: %w", ErrStreamGone, err))
	case errCode(err) == errCodeUnknownBatch:
		l.reset() // ended or expired: its values go again, dropped where stored
	case errCode(err) == errCodeTooManyBatches, apiStatus(err) == 503:
		l.reset()
		l.backoff = min(max(2*l.backoff, 25*time.Millisecond), l.cfg.maxBackoff)
		l.enter(phaseWaiting, now)
	case l.phase == phaseStarting:
		l.reset()
		l.fail(refusal(err)) // the stream refused the first value
	default:
		l.ended(reply{}, now)
	}
}

// failAll fails every value held.
func (l *link) failAll(err error) {
	for l.ring.len() > 0 {
		l.fail(err)
	}
}

// tick moves the batch on as time passes and returns when it next needs
// to: a reply overdue, a commit due, a wait over, a value past its
// delivery deadline.
func (l *link) tick(now time.Time) time.Time {
	l.expire(now)
	switch l.phase {
	case phaseStarting:
		if !now.Before(l.since.Add(l.cfg.probeTimeout)) {
			// No answer: ask whether the server has the batch, rather
			// than send its first value again at once: a copy sent while
			// the first is still being written (a leader without its
			// quorum) would be skipped and acked as stored, and lost if
			// that leader dies.
			l.ping(now)
		}
	case phaseOpen:
		l.tickOpen(now)
	case phaseEnding, phasePinging:
		if !now.Before(l.since.Add(l.cfg.probeTimeout)) {
			l.ping(now)
		}
	case phaseWaiting:
		if !now.Before(l.since.Add(l.backoff)) {
			if l.sent > 0 {
				l.ping(now) // the batch may hold values: ask
			} else {
				l.reset()
			}
		}
	}
	return l.next(now)
}

func (l *link) tickOpen(now time.Time) {
	switch {
	case l.sent > 0 && !now.Before(l.progress.Add(l.cfg.ackTimeout)):
		l.ping(now) // acks overdue: ask where the batch stands
	case l.sent == l.ring.len() && (l.closing || !now.Before(l.lastSend.Add(l.cfg.linger))):
		// Nothing more to send: end the batch, so that the server acks
		// its tail at once (flow acks come only every interval values).
		l.ctl = opCommit
		l.enter(phaseEnding, now)
	}
}

func (l *link) ping(now time.Time) {
	l.ctl = opPing
	l.enter(phasePinging, now)
}

// next returns when tick is next needed.
func (l *link) next(now time.Time) time.Time {
	far := now.Add(time.Hour)
	t := far
	switch l.phase {
	case phaseStarting, phaseEnding, phasePinging:
		t = l.since.Add(l.cfg.probeTimeout)
	case phaseWaiting:
		t = l.since.Add(l.backoff)
	case phaseOpen:
		if l.sent > 0 {
			t = l.progress.Add(l.cfg.ackTimeout)
		}
		if l.sent == l.ring.len() {
			t = minTime(t, l.lastSend.Add(l.cfg.linger))
		}
	}
	if l.cfg.deliveryTimeout > 0 && l.ring.len() > 0 {
		t = minTime(t, l.ring.at(0).added.Add(l.cfg.deliveryTimeout))
	}
	return t
}

// expire fails the values older than the delivery timeout. The stream may
// have stored them (their acks late or lost).
func (l *link) expire(now time.Time) {
	if l.cfg.deliveryTimeout <= 0 {
		return
	}
	for l.ring.len() > 0 && !now.Before(l.ring.at(0).added.Add(l.cfg.deliveryTimeout)) {
		starting := l.phase == phaseStarting && l.ring.at(0).bseq != 0
		l.fail(fmt.Errorf("natsbridge: not confirmed within the delivery timeout (%v)", l.cfg.deliveryTimeout))
		if starting {
			l.reset()
		}
	}
}

// reconnected: the connection was lost and made again, maybe to a server
// that restarted (and forgot its batches) or to another node. Messages in
// flight then may be lost, and so may answers: ask where the batch stands
// at once, rather than wait for the ack timeout.
func (l *link) reconnected(now time.Time) {
	switch l.phase {
	case phaseStarting, phaseOpen, phaseEnding, phasePinging:
		if l.sent > 0 {
			l.ping(now) // see tick: never a copy before the server says
		}
	}
}

// abandon settles every value held as unconfirmed: a Shutdown gave up, or
// the connection closed.
func (l *link) abandon() {
	for l.ring.len() > 0 {
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

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// refusal is the error a value the stream refused fails with.
func refusal(err error) error {
	if err == nil {
		return errors.New("natsbridge: refused by the stream")
	}
	return fmt.Errorf("natsbridge: refused by the stream: %w", err)
}

// apiError turns a server's error into an error: nil stays nil.
func apiError(e *jetstream.APIError) error {
	if e == nil {
		return nil
	}
	return e
}

// errCode returns the JetStream error code err carries, or 0.
func errCode(err error) int {
	if a, ok := errors.AsType[*jetstream.APIError](err); ok {
		return int(a.ErrorCode)
	}
	return 0
}

// apiStatus returns the status code err carries, or 0.
func apiStatus(err error) int {
	if a, ok := errors.AsType[*jetstream.APIError](err); ok {
		return a.Code
	}
	return 0
}
