package natsbridge

import (
	"fmt"
	"time"
)

// The link as time passes: the probes of a batch whose answer is overdue,
// the commit of an idle batch, the end of a wait, the values past their
// delivery deadline, and what a reconnection changes.

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
	case l.sent == l.ring.Len() && (l.closing || !now.Before(l.lastSend.Add(l.cfg.linger))):
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
		if l.sent == l.ring.Len() {
			t = minTime(t, l.lastSend.Add(l.cfg.linger))
		}
	}
	if l.cfg.deliveryTimeout > 0 && l.ring.Len() > 0 {
		t = minTime(t, l.ring.At(0).added.Add(l.cfg.deliveryTimeout))
	}
	return t
}

// expire fails the values older than the delivery timeout. The stream may
// have stored them (their acks late or lost).
func (l *link) expire(now time.Time) {
	if l.cfg.deliveryTimeout <= 0 {
		return
	}
	for l.ring.Len() > 0 && !now.Before(l.ring.At(0).added.Add(l.cfg.deliveryTimeout)) {
		starting := l.phase == phaseStarting && l.ring.At(0).bseq != 0
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

// minTime returns the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
