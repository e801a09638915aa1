package natsbridge

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/broadcast"
)

// Defaults, used where an options struct leaves a field at zero.
const (
	// DefaultDuplicates is how long the stream remembers message ids to
	// drop a retried publish it already stored: the server's default,
	// used when TopicOptions.Duplicates is zero and MaxAge is zero or
	// longer.
	DefaultDuplicates = 2 * time.Minute
	// DefaultHeartbeat is how often an idle watcher checks its consumer
	// with the server. A consumer lost with a server restart is noticed,
	// and created again where it stopped, within about one heartbeat.
	DefaultHeartbeat = 5 * time.Second
	// DefaultWindow is how many published values a publisher keeps until
	// the stream confirms them: the values in flight and those waiting for
	// their turn. Its memory is up to Window times the size of a value.
	// Batches carry at most 2*500 values past the last ack at a time (the
	// server acks every 500 values at most), so a wider window only
	// buffers more while the stream cannot take values (a leader
	// election), and sends them at once when it can.
	DefaultWindow = 4000
	// DefaultAckTimeout is how long a publisher waits for an answer of the
	// server about values in flight before it asks where their batch
	// stands (and sends again what the stream did not store).
	DefaultAckTimeout = 5 * time.Second
	// DefaultTakeover is how long a standby durable watcher waits, after
	// the active reader's last request, before it takes over (see
	// WatchOptions.Takeover).
	DefaultTakeover = 5 * time.Second
	// DefaultReadAhead is how many messages a consumer asks the server for
	// at a time, besides what its watcher's queue holds.
	DefaultReadAhead = 256
)

// Limits on options, beyond which the memory a watcher or publisher sets
// aside up front would be absurd.
const (
	// MaxReadAhead is the largest TopicOptions.ReadAhead NewTopic
	// accepts. Each consumer's client side sets aside a place (a pointer)
	// for every message it may read ahead: 8 MiB per consumer at this
	// size.
	MaxReadAhead = 1 << 20
	// MaxWindow is the largest PublisherOptions.Window Topic.Publisher
	// accepts. A publisher sets aside a place (a pointer) for every value
	// in its window: 8 MiB at this size.
	MaxWindow = 1 << 20
)

// TopicOptions configures the stream behind a Topic. The zero value gives a
// file-backed stream, one replica, kept forever, with a two-minute window for
// dropping publishes sent again (DefaultDuplicates), when NewTopic creates
// the stream; on a stream that exists, the zero value (of the stream's
// fields: MaxAge, MaxMsgs, MaxBytes, Storage, Replicas, Duplicates) opens
// it as it is.
//
// One owner configures a topic. NewTopic creates a missing stream with
// these options; on a stream that exists, options that are not zero must
// agree with its configuration, field by field (a zero field meaning what
// it means at creation: no limit, one replica), or NewTopic returns
// ErrConfigDiffers naming each difference and leaves the stream as it is.
// Set Update to change the stream to these options instead. The server
// refuses some changes, and some options beyond its limits or its
// account's (Storage of a stream it holds; Replicas above one without a
// cluster, or above the cluster's size; a MaxBytes above the account's
// storage; a Duplicates longer than MaxAge): NewTopic then returns the
// server's error (wrapping a *jetstream.APIError), and the stream keeps
// its configuration.
type TopicOptions struct {
	// MaxAge drops values older than this. Zero keeps them regardless of
	// age.
	MaxAge time.Duration
	// MaxMsgs keeps at most this many values, dropping the oldest. Zero
	// means no limit.
	MaxMsgs int64
	// MaxBytes keeps at most this many bytes of values, dropping the
	// oldest. Zero means no limit.
	MaxBytes int64
	// Storage is where the server keeps the stream. The zero value is
	// jetstream.FileStorage, which survives a server restart.
	Storage jetstream.StorageType
	// Replicas is the number of copies in a cluster. Zero means 1.
	Replicas int
	// Duplicates is how long the stream remembers message ids, so that a
	// value sent again within it is stored once. Zero means the server's
	// default: DefaultDuplicates, or MaxAge if that is shorter (or a
	// lower limit set for the server or the account); on an existing
	// stream, a zero Duplicates agrees with whatever window it has. The
	// server refuses a window longer than MaxAge, so a non-zero Duplicates
	// must not exceed a non-zero MaxAge. A publisher sends a value again
	// for as long as this window by default
	// (PublisherOptions.DeliveryTimeout).
	Duplicates time.Duration
	// Heartbeat is how often a watcher or mirror of this topic that
	// received nothing asks the server about its consumer (one small
	// request); a consumer that is gone (a server restart) or that
	// delivered a message the watcher did not receive (lost with a
	// connection) is created again from where the watcher stopped. The
	// server also sends heartbeats at this interval to idle consumers.
	// Zero means DefaultHeartbeat; it must lie between 500ms and 10s.
	Heartbeat time.Duration
	// ReadAhead is how many messages each consumer of this topic asks for
	// at a time. Zero means DefaultReadAhead; it must not exceed
	// MaxReadAhead.
	ReadAhead int
	// Schema names the values the topic carries, the same in every process
	// that opens it: "shop.Order/v1", say. It is recorded in the stream
	// with the codec's name, and a process with another schema or codec is
	// refused (ErrTypeMismatch), so that two services with their own Go
	// types (in two packages, two repositories) share a topic by sharing
	// its schema's name, and nothing decodes values written for another.
	// Empty means a name derived from T: its package path and name, with a
	// digest of its shape (a struct's field names, types and tags) checked
	// beside it, because reflection cannot tell apart two types that share
	// a name and a package (types local to two functions): two such types
	// share a topic only if their shapes match. A derived schema suits one
	// program; name the schema when several programs, or several versions
	// of a type, share the topic. At most 256 bytes.
	Schema string
	// Update lets NewTopic change an existing stream's configuration to
	// these options (zero fields meaning what they mean at creation)
	// rather than return ErrConfigDiffers. It is for the topic's owner.
	Update bool
	// Logger receives a warning for each kind of problem (poison
	// messages, gaps, lost consumers; values a publisher refused; values
	// it failed or lost, and values a Forward abandoned), at most one
	// line a second per kind and watcher, mirror or publisher: the first
	// of a burst at once, while those that follow within the second are
	// only counted, and the next line written reports them
	// (suppressed=N). What no line reported is reported in one last line
	// ("natsbridge: warnings suppressed", with the count) when the
	// watcher or mirror ends or the publisher shuts down. Nil means
	// slog.Default(). Values and credentials are never logged (a codec's
	// error only by its Go type: see Codec).
	Logger *slog.Logger
}

// PublisherOptions configures a Publisher. The zero value is ready to use:
// each field documents its default.
type PublisherOptions struct {
	// Window is how many accepted values the publisher keeps until the
	// stream confirms them. Publish waits, and TryPublish refuses, while
	// it is full. Zero means DefaultWindow; it must not exceed MaxWindow.
	Window int
	// AckTimeout is how long the publisher waits for an answer of the
	// server about values in flight before it asks where their batch
	// stands (and again at most every second, for as long as nothing
	// answers). Values the stream did not store are sent again, in order,
	// under their message ids, once the server has said so. Zero means
	// DefaultAckTimeout.
	AckTimeout time.Duration
	// DeliveryTimeout is how long a value may stay unconfirmed before it
	// is counted as Failed (it may still have been stored, its acks lost).
	// The publisher keeps sending a value until then, whatever the
	// server's state. Zero means the stream's duplicates window (see
	// TopicOptions.Duplicates), so that the stream drops every copy of a
	// value it stored; a negative value means never (values then wait,
	// unconfirmed, for as long as the stream cannot take them, and
	// Shutdown's context bounds that).
	DeliveryTimeout time.Duration
}

// WatchOptions configures one remote watcher, made by Topic.Watch. The zero
// value gives a Block watcher with broadcast's default queue length that
// receives what is stored after Watch.
type WatchOptions struct {
	// QueueLength is the capacity of the watcher's queue. Zero means
	// broadcast.DefaultQueueLength.
	QueueLength int
	// Full is the watcher's policy when its queue is full. The zero value
	// is broadcast.Block: the watcher stops reading from the stream, which
	// keeps the backlog, and nothing is lost while the stream retains it
	// (besides its queue, a Block watcher holds at most about
	// 2*broadcast.DefaultIncomingQueueLength + TopicOptions.ReadAhead
	// values read ahead). broadcast.DropNewest and broadcast.DropOldest
	// keep reading and drop (and count) values locally.
	Full broadcast.FullPolicy
	// Read is how the watcher is read. The zero value, broadcast.ReadQueue,
	// makes a queue watcher, read with All and Next (and Done, for a
	// durable one); broadcast.ReadChannel makes a channel watcher, read
	// with Events, on which All and Next read the channel too. A durable
	// watcher is a queue watcher: a channel cannot say when its reader is
	// done with a value, which is when a durable watcher acknowledges it.
	Read broadcast.ReadMode
	// From is the stream sequence of the first value the watcher is owed.
	// Zero means the sequence after the last value stored when Watch is
	// called: the watcher gets what follows. To resume a watcher, pass its
	// Seq()+1. A From older than what the stream retains counts the
	// missing values as gaps. With Durable, From is used only when the
	// durable position is created.
	From uint64
	// Durable names a position the server keeps for this watcher (ASCII
	// letters, digits, '-' and '_'): the value after the last one its
	// application read and acknowledged. Every process that watches the
	// topic with the same name shares the position, and one of them at a
	// time reads from it, in stream order: the active reader; the others
	// stand by. See the package doc, "Durable watchers". Empty means the
	// watcher's position lives in the process only (Seq).
	Durable string
	// DeadLetters, if set, is where a handle.Pool reading the watcher
	// keeps the values it gives up on: a topic of DeadLetter, each
	// stored and confirmed before the value is acknowledged (see
	// Watcher.DeadLetter, and Redrive). Nil: the Pool's own
	// DeadLetters watcher gets them.
	DeadLetters *Topic[DeadLetter]
	// Takeover is, for a durable watcher, how long the server waits for
	// the active reader's next request before it gives the next value to a
	// standby: the time a standby takes to take over from a reader that
	// died (one that stops hands over at once). It is set when the durable
	// position is created. Zero means DefaultTakeover; at least 2s.
	Takeover time.Duration
}

// Invalid options. A value no call could work with (a negative size, a
// duration outside its range, an unknown policy) is refused by the call
// it is given to (NewTopic, Watch, Mirror, Topic.Publisher) with an error
// that names the field.

// checkTopicOptions returns an error for TopicOptions no topic can work
// with.
func checkTopicOptions(o TopicOptions) error {
	switch {
	case o.MaxAge < 0:
		return errors.New("natsbridge: negative TopicOptions.MaxAge")
	case o.MaxMsgs < 0:
		return errors.New("natsbridge: negative TopicOptions.MaxMsgs")
	case o.MaxBytes < 0:
		return errors.New("natsbridge: negative TopicOptions.MaxBytes")
	case o.Replicas < 0:
		return errors.New("natsbridge: negative TopicOptions.Replicas")
	case o.Duplicates < 0:
		return errors.New("natsbridge: negative TopicOptions.Duplicates")
	case o.ReadAhead < 0:
		return errors.New("natsbridge: negative TopicOptions.ReadAhead")
	case o.ReadAhead > MaxReadAhead:
		return fmt.Errorf("natsbridge: TopicOptions.ReadAhead %d is above MaxReadAhead (%d)", o.ReadAhead, MaxReadAhead)
	case o.Heartbeat != 0 && (o.Heartbeat < 500*time.Millisecond || o.Heartbeat > 10*time.Second):
		return fmt.Errorf("natsbridge: TopicOptions.Heartbeat %v outside 500ms..10s", o.Heartbeat)
	case o.Storage != jetstream.FileStorage && o.Storage != jetstream.MemoryStorage:
		return fmt.Errorf("natsbridge: unknown TopicOptions.Storage %d", o.Storage)
	case len(o.Schema) > maxSchemaLength:
		return fmt.Errorf("natsbridge: TopicOptions.Schema longer than %d bytes", maxSchemaLength)
	}
	return nil
}

// checkPublisherOptions returns an error for PublisherOptions no publisher
// can work with; Topic.Publisher panics with it. A negative
// DeliveryTimeout is valid: it means never.
func checkPublisherOptions(o PublisherOptions) error {
	switch {
	case o.Window < 0:
		return errors.New("natsbridge: negative PublisherOptions.Window")
	case o.Window > MaxWindow:
		return fmt.Errorf("natsbridge: PublisherOptions.Window %d is above MaxWindow (%d)", o.Window, MaxWindow)
	case o.AckTimeout < 0:
		return errors.New("natsbridge: negative PublisherOptions.AckTimeout")
	}
	return nil
}

// checkWatchOptions returns an error for WatchOptions no watcher can work
// with.
func checkWatchOptions(o WatchOptions) error {
	if err := checkQueue("WatchOptions", broadcast.Options{QueueLength: o.QueueLength, Full: o.Full}); err != nil {
		return err
	}
	switch {
	case o.Durable == "" && o.Takeover != 0:
		return errors.New("natsbridge: WatchOptions.Takeover without Durable")
	case o.Read != broadcast.ReadQueue && o.Read != broadcast.ReadChannel:
		return fmt.Errorf("natsbridge: invalid WatchOptions.Read %d", o.Read)
	case o.Durable == "":
		return nil
	case o.Full != 0 && o.Full != broadcast.Block:
		return fmt.Errorf("natsbridge: WatchOptions.Full %v with Durable: a durable watcher delivers at least once, so it never drops a value; use broadcast.Block (the default)", o.Full)
	case o.Read == broadcast.ReadChannel:
		return errors.New("natsbridge: WatchOptions.Read broadcast.ReadChannel with Durable: a durable watcher acknowledges a value once its reader is done with it, which a channel cannot tell; read it with All or Next")
	case o.Takeover < 0 || (o.Takeover > 0 && o.Takeover < 2*time.Second):
		return fmt.Errorf("natsbridge: WatchOptions.Takeover %v is below 2s", o.Takeover)
	}
	return validDurable(o.Durable)
}

// checkMirrorOptions returns an error for the options of a mirror's
// broadcaster that broadcast.New would refuse.
func checkMirrorOptions(o broadcast.Options) error {
	return checkQueue("broadcast.Options", o)
}

// checkQueue returns an error for the queue lengths and the policy of o
// that broadcast refuses with a panic (broadcast.New returns no error);
// what names the options in the message.
func checkQueue(what string, o broadcast.Options) error {
	for _, q := range []struct {
		field string
		n     int
	}{{"QueueLength", o.QueueLength}, {"IncomingQueueLength", o.IncomingQueueLength}} {
		if q.n < 0 || q.n > broadcast.MaxQueueLength {
			return fmt.Errorf("natsbridge: %s.%s %d outside [0, broadcast.MaxQueueLength]", what, q.field, q.n)
		}
	}
	switch o.Full {
	case 0, broadcast.Block, broadcast.DropNewest, broadcast.DropOldest:
		return nil
	}
	return fmt.Errorf("natsbridge: invalid %s.Full %v", what, o.Full)
}
