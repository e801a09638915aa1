package natsbridge

import (
	"context"
	"errors"

	"github.com/heraldgo/herald/broadcast"
)

// Errors callers branch on. Test for them with errors.Is: most are
// returned wrapped, with the detail that caused them.
var (
	// ErrClosed is returned once a Publisher, Topic or Watcher has shut
	// down or stopped. It is broadcast.ErrClosed, so one errors.Is test
	// serves both packages.
	ErrClosed = broadcast.ErrClosed

	// ErrInvalidName is returned by NewTopic for a topic name that is not
	// a dot-separated list of non-empty tokens made of ASCII letters,
	// digits, '-' and '_', and by Watch and DeleteDurable for a durable
	// name that is not made of ASCII letters, digits, '-' and '_'. The
	// error says which name.
	ErrInvalidName = errors.New("natsbridge: invalid name")

	// ErrTypeMismatch is returned by NewTopic when the stream records
	// another schema or codec than the caller's (see TopicOptions.Schema
	// and Codec).
	ErrTypeMismatch = errors.New("natsbridge: stream holds another type")

	// ErrConfigDiffers is returned by NewTopic when the caller's
	// TopicOptions differ from the existing stream's configuration, and do
	// not ask for the change (TopicOptions.Update); the error names each
	// difference. The stream is left as it is.
	ErrConfigDiffers = errors.New("natsbridge: stream configured otherwise")

	// ErrNameConflict is returned by NewTopic when a stream of the same
	// name exists but serves other subjects (another topic whose name maps
	// to the same stream, or a stream that herald did not create).
	ErrNameConflict = errors.New("natsbridge: stream name in use")

	// ErrCodec wraps an error returned, or a panic raised, by a Codec.
	ErrCodec = errors.New("natsbridge: codec failed")

	// ErrTooLarge is returned by Publish and TryPublish for a value whose
	// encoding exceeds the largest message the server accepts.
	ErrTooLarge = errors.New("natsbridge: value too large")

	// ErrStreamGone is returned by Watch and Mirror, and by Watcher.Err,
	// when the topic's stream was deleted (or deleted and created again,
	// which restarts its sequence numbers).
	ErrStreamGone = errors.New("natsbridge: stream deleted")

	// ErrUnconfirmed is returned by Publisher.Shutdown, and so by
	// Topic.Shutdown, when accepted values ended neither confirmed nor
	// failed: another Shutdown of the publisher gave up on them (its
	// context ended first; that call returns its ctx.Err()), or the
	// connection was closed before their ack came. Those values are
	// counted in PublisherStats.Unconfirmed; they may or may not be
	// stored.
	ErrUnconfirmed = errors.New("natsbridge: values left unconfirmed")

	// ErrDurableGone is returned by Watcher.Err when a durable watcher's
	// position was deleted (Topic.DeleteDurable) while it ran.
	ErrDurableGone = errors.New("natsbridge: durable position deleted")

	// ErrBadStart is returned by Watch for a WatchOptions.From beyond the
	// sequence the stream will give its next value.
	ErrBadStart = errors.New("natsbridge: start sequence beyond the stream's end")
)

// mustContext panics on a nil ctx, at the call that was given it: that is
// a programming error, as in the standard library.
func mustContext(ctx context.Context) {
	if ctx == nil {
		panic("natsbridge: nil Context")
	}
}
