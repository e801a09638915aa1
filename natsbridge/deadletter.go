package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/handle"
)

// DeadLetter is a value a handle.Pool gave up on, as a dead-letter topic
// (a Topic[DeadLetter], see WatchOptions.DeadLetters) keeps it: the
// original message, bytes and headers, where it was, and why it was given
// up. Redrive publishes it back.
type DeadLetter struct {
	// Topic and Seq are the topic (the subject) the value came from and
	// its stream sequence there; Stream is that stream's name.
	Topic  string `json:"topic"`
	Seq    uint64 `json:"seq"`
	Stream string `json:"stream,omitempty"`
	// Data and Header are the message as the stream stored it. Data is nil
	// if Gone (retention had removed the value before it was given up:
	// nothing can be redriven) or Omitted (the value was too large to be
	// copied into a dead letter: Redrive reads it from Stream at Seq, while
	// the stream keeps it).
	Data    []byte      `json:"data,omitempty"`
	Header  nats.Header `json:"header,omitempty"`
	Gone    bool        `json:"gone,omitempty"`
	Omitted bool        `json:"omitted,omitempty"`
	// Error is the handler's last error, or the codec's for a value that
	// could not be decoded.
	Error string `json:"error"`
	// Attempts is how many times the value was handled, across its
	// deliveries; First and Last when its first and last attempt began.
	Attempts int       `json:"attempts"`
	First    time.Time `json:"first,omitzero"`
	Last     time.Time `json:"last,omitzero"`
}

// DeadLetter stores a dead letter of the value at seq in the watcher's
// dead-letter topic (WatchOptions.DeadLetters), and returns once the
// stream confirmed it; a handle.Pool calls it before it marks the value
// done, so that a crash between the two loses nothing. The dead letter's
// message id derives from the watcher's topic, seq and the time the stream
// stored the value, and from the watcher's durable name (a watcher that is
// not durable has an id of its own), so a dead letter stored again (a
// crash after it was confirmed, before the value was acknowledged) is
// stored once, while two durable positions that give up on one value
// (two services sharing a dead-letter topic) keep a dead letter each. It
// returns handle.ErrNoDeadLetterSink if the watcher has no dead-letter
// topic.
func (w *Watcher[T]) DeadLetter(ctx context.Context, seq uint64, f handle.Failure) error {
	dlq := w.dead
	if dlq == nil {
		return handle.ErrNoDeadLetterSink
	}
	d := DeadLetter{Topic: w.t.name, Seq: seq, Stream: w.t.streamID, Attempts: f.Attempts, First: f.First, Last: f.Last}
	if f.Err != nil {
		d.Error = f.Err.Error()
	}
	var stored int64
	raw, err := w.t.stream.GetMsg(ctx, seq)
	switch {
	case err == nil:
		d.Data, d.Header, stored = raw.Data, raw.Header, raw.Time.UnixNano()
	case errors.Is(err, jetstream.ErrMsgNotFound):
		d.Gone = true
	default:
		return fmt.Errorf("natsbridge: topic %q: read value %d to dead-letter it: %w", w.t.name, seq, err)
	}
	// The stored time tells a value from one at the same sequence of a
	// stream deleted and made again.
	id := "herald-dead-" + w.t.streamID + "-" + strconv.FormatUint(seq, 10) + "-" + strconv.FormatInt(stored, 10) + "-" + w.deadID
	err = dlq.store(ctx, d, id)
	if errors.Is(err, nats.ErrMaxPayload) {
		// The value fits a message, its dead letter does not (base64,
		// headers, the error): keep the rest, and where to find it.
		d.Data, d.Omitted = nil, true
		err = dlq.store(ctx, d, id)
	}
	return err
}

// deadLetterID tells the dead letters of a watcher made with o from
// another's of the same values (see Watcher.DeadLetter): its durable name,
// or a random id for a watcher that is not durable.
func deadLetterID(o WatchOptions) string {
	if o.Durable != "" {
		return "d" + o.Durable
	}
	return "w" + strconv.FormatUint(rand.Uint64(), 36)
}

// store publishes v under message id id and waits for the stream's
// confirmation: a copy sent again within the duplicates window is stored
// once.
func (t *Topic[T]) store(ctx context.Context, v T, id string) error {
	data, err := encode(t.codec, v)
	if err != nil {
		return err
	}
	msg := &nats.Msg{Subject: t.name, Data: data, Header: nats.Header{}}
	if _, err := t.js.PublishMsg(ctx, msg, jetstream.WithMsgID(id), jetstream.WithExpectStream(t.streamID)); err != nil {
		return fmt.Errorf("natsbridge: topic %q: store: %w", t.name, err)
	}
	return nil
}

// RedriveStats says what a Redrive did.
type RedriveStats struct {
	// Redriven counts the dead letters published back to their topic;
	// Kept those the filter kept in the dead-letter topic; Gone those left
	// there because their value is gone (DeadLetter.Gone, or Omitted and
	// no longer in its stream): nothing could be published in its place.
	Redriven, Kept, Gone uint64
}

// Redrive publishes the dead letters that dlq holds now back to the
// topics they came from, with their bytes and headers, each once, and
// removes each from dlq once its topic confirmed it: a Redrive run again
// finds only what the first kept, or what came since. keep, if not nil,
// says which dead letters to leave in dlq. A redriven value lands at the
// end of its topic: after the values of its key that came after it, which
// were handled meanwhile. Each is published under a message id made of
// dlq's stream and the dead letter's sequence, so one sent again after a
// crash is stored once (within the topic's duplicates window), and the
// time dlq stored it, so that a dead letter of a dlq deleted and made
// again is not taken for a copy of one redriven before. ctx bounds the
// whole; Redrive panics on a nil ctx.
func Redrive(ctx context.Context, dlq *Topic[DeadLetter], keep func(DeadLetter) bool) (RedriveStats, error) {
	mustContext(ctx)
	var st RedriveStats
	info, err := dlq.streamState(ctx)
	if err != nil {
		return st, err
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		raw, err := dlq.stream.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // removed: redriven before, or by retention
		}
		if err != nil {
			return st, fmt.Errorf("natsbridge: redrive %q: read %d: %w", dlq.name, seq, err)
		}
		d, err := decode(dlq.codec, raw.Data)
		if err != nil {
			return st, fmt.Errorf("natsbridge: redrive %q: dead letter %d: %w", dlq.name, seq, err)
		}
		if keep != nil && keep(d) {
			st.Kept++
			continue
		}
		if d, err = restore(ctx, dlq, d); errors.Is(err, errGone) {
			st.Gone++
			continue
		} else if err != nil {
			return st, err
		}
		removed, err := redriveOne(ctx, dlq, seq, raw.Time, d)
		if err != nil {
			return st, err
		}
		if removed {
			st.Redriven++
		}
	}
	return st, nil
}

// errGone: a dead letter's value is gone: nothing can be redriven.
var errGone = errors.New("natsbridge: the dead letter's value is gone")

// restore returns d with its value's bytes: read from its stream if it was
// too large to be copied into d; errGone if it is gone.
func restore(ctx context.Context, dlq *Topic[DeadLetter], d DeadLetter) (DeadLetter, error) {
	switch {
	case d.Gone:
		return d, errGone
	case !d.Omitted:
		return d, nil
	}
	s, err := dlq.js.Stream(ctx, d.Stream)
	if err == nil {
		var raw *jetstream.RawStreamMsg
		if raw, err = s.GetMsg(ctx, d.Seq); err == nil {
			d.Data, d.Header = raw.Data, raw.Header
			return d, nil
		}
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return d, errGone
	}
	return d, fmt.Errorf("natsbridge: redrive %q: read dead letter's value %s #%d: %w", dlq.name, d.Stream, d.Seq, err)
}

// validSubject checks the subject a dead letter goes back to: a topic's
// name, or a partition's (<topic>.$p<n>).
func validSubject(subject string) error {
	name, part, ok := strings.Cut(subject, ".$p")
	if !ok {
		return validName(subject)
	}
	if _, err := strconv.ParseUint(part, 10, 32); err != nil {
		return fmt.Errorf("%w: %q is not a partition's subject", ErrInvalidName, subject)
	}
	return validName(name)
}

// redriveOne publishes dead letter d, stored at seq in dlq at time at, back
// to its topic, then removes it from dlq. It reports whether this call
// removed it: of Redrives running at once, the one whose removal the
// server did, so that each dead letter is counted redriven once.
func redriveOne(ctx context.Context, dlq *Topic[DeadLetter], seq uint64, at time.Time, d DeadLetter) (bool, error) {
	if err := validSubject(d.Topic); err != nil {
		return false, fmt.Errorf("natsbridge: redrive %q: dead letter %d: %w", dlq.name, seq, err)
	}
	h := nats.Header{}
	for k, v := range d.Header {
		if !strings.HasPrefix(k, "Nats-") { // the server's and the publisher's own: a new message gets its own
			h[k] = v
		}
	}
	msg := &nats.Msg{Subject: d.Topic, Data: d.Data, Header: h}
	id := "herald-redrive-" + dlq.streamID + "-" + strconv.FormatUint(seq, 10) + "-" + strconv.FormatInt(at.UnixNano(), 10)
	if _, err := dlq.js.PublishMsg(ctx, msg, jetstream.WithMsgID(id)); err != nil {
		return false, fmt.Errorf("natsbridge: redrive %q: dead letter %d to %q: %w", dlq.name, seq, d.Topic, err)
	}
	err := dlq.stream.DeleteMsg(ctx, seq)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return false, nil // another Redrive removed it
	}
	if _, gerr := dlq.stream.GetMsg(ctx, seq); !errors.Is(gerr, jetstream.ErrMsgNotFound) {
		return false, fmt.Errorf("natsbridge: redrive %q: remove dead letter %d: %w", dlq.name, seq, err)
	}
	// Gone. The server answers a removal of a message gone already with
	// a failure: another Redrive removed it. Without an answer (a
	// timeout, a lost connection), the removal was this one's.
	answered := errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful)
	if _, ok := errors.AsType[*jetstream.APIError](err); ok {
		answered = true
	}
	return !answered, nil
}
