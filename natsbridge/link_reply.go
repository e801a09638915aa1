package natsbridge

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The link's answers: what each answer of the server (batch.go) does to
// the batch and the values it carries, and how an error the server
// returns is classified: a batch to start again, a wait, or values that
// fail.

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
	if l.refusedS != 0 && l.sent > 0 && l.ring.At(0).bseq == l.refusedS {
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
