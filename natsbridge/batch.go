package natsbridge

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A Publisher sends its values as JetStream fast batches (nats-server 2.14
// and later) in "gap: fail" mode: every message carries, in its reply
// subject, the batch it belongs to and its place in it, and the stream
// stores a batch's messages only in that order, each right after the one
// before. A message that arrives after a missing one ends the batch,
// with an ack that says how many of its messages were stored; the
// publisher sends the rest again in a new batch, under the same message
// ids. The reply subject of a batch message is
//
//	<inbox>.<batch id>.<ack every>.fail.<sequence in the batch>.<operation>.$FI
//
// and every answer of the server about it arrives on that subject: a flow
// ack every so many stored messages, a report of a gap or of a refused
// message, and a final pub ack when the batch ends.

// Operations of a batch message, as the server reads them from its reply
// subject.
const (
	opStart       = 0 // the first message of a batch
	opAppend      = 1 // a message after it
	opCommitValue = 2 // the last message: a batch of one value is acked as a plain publish
	opCommit      = 3 // end the batch, without a message of its own
	opPing        = 4 // ask where the batch stands, without a message
)

// Error codes of the server that the publisher branches on.
const (
	errCodeBatchDisabled  = 10205 // the stream does not take batches
	errCodeUnknownBatch   = 10208 // the batch ended, or never began
	errCodeTooManyBatches = 10211 // too many batches in flight on the stream
	errCodeStreamNotFound = 10059
)

// maxAckInterval is the widest interval between flow acks the publisher
// asks for, the server's own cap; maxOutstandingAcks how many such
// intervals it sends ahead of the last ack (two: the server works on one
// while the next arrives).
const (
	maxAckInterval     = 500
	maxOutstandingAcks = 2
)

// replyKind says what an answer of the server is.
type replyKind int

const (
	replyFlowAck      replyKind = iota + 1 // every message up to ackSeq is stored
	replyGap                               // a message is missing: the batch ends
	replyRefused                           // a message was refused: the batch ends
	replyPubAck                            // the batch ended: count messages stored
	replyError                             // the batch ended, or never began, with err
	replyNoResponders                      // nothing took the message: no stream, or no leader
)

// reply is one answer of the server about a batch message.
type reply struct {
	batch string // the batch it is about
	op    int    // the operation of the message it answers
	seq   uint64 // that message's sequence in its batch
	kind  replyKind

	ackSeq    uint64 // replyFlowAck: stored up to here
	interval  uint64 // replyFlowAck: the server acks every interval messages
	count     uint64 // replyPubAck: the batch's messages stored
	streamSeq uint64 // replyPubAck: the stream sequence of the last one
	refused   uint64 // replyRefused: the sequence of the refused message
	err       *jetstream.APIError
}

// wireReply is every field an answer may hold: a flow ack ("type":"ack"),
// a gap ("gap"), a refusal ("err"), or a pub ack, possibly an error.
type wireReply struct {
	Type  string              `json:"type"`
	Seq   uint64              `json:"seq"`
	Msgs  uint64              `json:"msgs"`
	Count uint64              `json:"count"`
	Error *jetstream.APIError `json:"error"`
}

// replySubjects builds the reply subjects of one batch's messages.
type replySubjects struct {
	prefix string // <inbox>.<batch id>.<ack every>.fail.
}

func newReplySubjects(inbox, batch string, interval uint64) replySubjects {
	return replySubjects{prefix: inbox + "." + batch + "." + strconv.FormatUint(interval, 10) + ".fail."}
}

// subject is the reply subject of the message at seq with operation op.
func (r replySubjects) subject(seq uint64, op int) string {
	b := make([]byte, 0, len(r.prefix)+24)
	b = append(b, r.prefix...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, '.', byte('0'+op))
	b = append(b, ".$FI"...)
	return string(b)
}

// parseReply reads an answer that arrived on subject (under inbox + ".").
// It reports false for anything it cannot read.
func parseReply(inbox string, m *nats.Msg) (reply, bool) {
	var r reply
	rest, ok := strings.CutPrefix(m.Subject, inbox+".")
	if !ok {
		return r, false
	}
	// <batch>.<interval>.fail.<seq>.<op>.$FI
	f := strings.Split(rest, ".")
	if len(f) != 6 || f[5] != "$FI" {
		return r, false
	}
	seq, err := strconv.ParseUint(f[3], 10, 64)
	if err != nil || len(f[4]) != 1 {
		return r, false
	}
	r.batch, r.seq, r.op = f[0], seq, int(f[4][0]-'0')
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		r.kind = replyNoResponders
		return r, true
	}
	var w wireReply
	if err := json.Unmarshal(m.Data, &w); err != nil {
		return r, false
	}
	switch {
	case w.Type == "ack":
		r.kind, r.ackSeq, r.interval = replyFlowAck, w.Seq, max(w.Msgs, 1)
	case w.Type == "gap":
		r.kind = replyGap
	case w.Type == "err":
		r.kind, r.refused, r.err = replyRefused, w.Seq, w.Error
	case w.Error != nil:
		r.kind, r.err = replyError, w.Error
	default:
		r.kind, r.count, r.streamSeq = replyPubAck, w.Count, w.Seq
	}
	return r, true
}
