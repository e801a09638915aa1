package handle

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Source is what a Pool reads: a watcher, read with Next until it returns
// an error (its end). *broadcast.Watcher and *natsbridge.Watcher are
// Sources. A Pool takes its source over: it reads it alone, and stops it
// (if it has a Stop method) when the Pool shuts down.
type Source[T any] interface {
	Next(ctx context.Context) (T, error)
}

// AckSource is a Source that is told when each value it handed out has its
// fate, so that it acknowledges only those: a durable *natsbridge.Watcher.
// A Pool reads it with Receive, and calls Done for each value once it is
// handled or dead-lettered, in any order; a value that has no fate when
// the Pool shuts down is never marked done, so that the source hands it
// out again (to the next reader of a durable position). A Seq names its
// value to the source, unique among the values out at once; Seqs need not
// increase (a natsbridge group member's carry their partition in their
// high bits).
type AckSource[T any] interface {
	Source[T]
	Receive(ctx context.Context) (Delivery[T], error)
	Done(seq uint64)
}

// A Delivery is a value an AckSource handed out, with what a Pool needs
// to know of it.
type Delivery[T any] struct {
	// Value is the value; the zero value if Err is set.
	Value T
	// Seq identifies the value in its source (a stream sequence), for
	// Done; it grows from one delivery to the next.
	Seq uint64
	// Attempt is how many times the source has delivered the value, this
	// time included (1 the first time): a value that comes again after
	// its reader died counts the attempts made before, so that one that
	// kills its reader every time reaches MaxAttempts.
	Attempt int
	// Err is set when the source could not decode the value (a poison
	// message): it goes to the dead letters before any handler runs.
	Err error
	// Turn is the source's turn when it handed the value out, for a
	// TurnSource (0 for another source).
	Turn uint64
}

// A TurnSource is an AckSource whose reader may lose the values it handed
// out before they have a fate: a durable *natsbridge.Watcher, whose
// position another reader may take over (its lease ran out while its
// process was paused; a consumer leader change) while values it handed out
// wait in the Pool behind their keys. Its turn counts the times its reader
// took the position over: the values handed out in an earlier turn are
// another reader's now (they come again to it, or came). A Pool reading a
// TurnSource asks Holds before each attempt at a value, and before it
// dead-letters a value whose handler failed: it begins (or dead-letters)
// the value if the reader holds it, waits while the reader is fenced in
// that same turn (its lease ran out, and whether another reader takes the
// position over is not known yet: a reader that resumes its position goes
// on with what it holds), and gives the value up, counted Abandoned and
// never marked done, if its turn is over. It marks values done with
// DoneTurn, which the source ignores for a value of an earlier turn (the
// same Seq may have been handed out again since).
type TurnSource interface {
	// Holds reports whether the reader holds the value at seq, handed
	// out in turn, and, with Fenced, a channel (never nil) closed when
	// that may change.
	Holds(seq, turn uint64) (Holding, <-chan struct{})
	// DoneTurn marks the value at seq, handed out in turn, done.
	DoneTurn(seq, turn uint64)
}

// Holding is what a TurnSource reports of the values it handed out in a
// turn.
type Holding int

const (
	// Held: the reader holds them; they may be handled.
	Held Holding = iota
	// Fenced: the reader stopped handing out (its lease ran out) and may
	// resume, or another reader may take its position over: wait.
	Fenced
	// Void: another reader had the position since: they are not to be
	// handled here.
	Void
)

func (h Holding) String() string {
	switch h {
	case Held:
		return "Held"
	case Fenced:
		return "Fenced"
	case Void:
		return "Void"
	}
	return fmt.Sprintf("Holding(%d)", int(h))
}

// DeadLetterSink is a source that keeps the dead letters of its own values
// durably, beside the values (a natsbridge watcher with a dead-letter
// topic): a Pool hands each dead letter of such a source to DeadLetter,
// which returns once it is stored, before the Pool marks the value done;
// its other dead letters go to Pool.DeadLetters. DeadLetter reports
// ErrNoDeadLetterSink if the source has nowhere to keep them.
type DeadLetterSink interface {
	DeadLetter(ctx context.Context, seq uint64, f Failure) error
}

// ErrNoDeadLetterSink is what a DeadLetterSink returns when it has nowhere
// to keep dead letters: the Pool hands them to Pool.DeadLetters instead.
var ErrNoDeadLetterSink = errors.New("handle: the source keeps no dead letters")

// Failure says why a value was given up on.
type Failure struct {
	// Err is the handler's last error (or the panic it raised, or the
	// codec's error for a value that could not be decoded).
	Err error
	// Attempts is how many times the value was handled, across its
	// source's deliveries (0 for a value that could not be decoded).
	Attempts int
	// First and Last are when its first and last attempt began (the time
	// it was received, for a value that could not be decoded).
	First, Last time.Time
}

// DeadLetter is a value a Pool gave up on: its handler failed
// MaxAttempts times, or returned a permanent error (see Permanent), or
// panicked that often, or the value could not be decoded, or its key
// function panicked.
type DeadLetter[T any, K comparable] struct {
	// Key is the value's key; the zero K if the key function panicked or
	// the value could not be decoded.
	Key K
	// Value is the value; the zero T if it could not be decoded.
	Value T
	// Seq is the value's sequence in its source (0 for a source without
	// one, such as a broadcast.Watcher).
	Seq uint64
	Failure
}

// ErrPermanent marks an error a handler returns for a value that no retry
// can handle: the Pool dead-letters the value at once. Wrap it with
// Permanent, or with fmt.Errorf's %w.
var ErrPermanent = errors.New("handle: permanent failure")

// Permanent returns err marked permanent: a Pool does not retry a value
// whose handler returned it. errors.Is(Permanent(err), err) holds.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }

func (p permanent) Is(target error) bool { return target == ErrPermanent }

func (p permanent) Unwrap() error { return p.err }

// A PartitionedSource delivers the values of several partitions, each in
// an order of its own and none between them: a natsbridge.Member. A Pool
// reading one checks that no key holds values of two partitions at once
// (Stats.Mixed): its key function must refine the partition key.
type PartitionedSource interface {
	// PartitionOf returns the partition of the value delivered with seq.
	PartitionOf(seq uint64) int
}
