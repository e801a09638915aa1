package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A durable watcher reads through a durable consumer that every process
// watching with the same name shares (WatchOptions.Durable): the server
// keeps its position, the last value acknowledged, and its priority group
// pins one reader at a time, the active one; the others stand by, their
// requests waiting. The active reader acknowledges what its application
// read, in batches (AckAll: one ack covers every value before it) and at
// Stop. When it dies, the server unpins it once it has sent no request for
// the takeover time, and pins a standby at the next value.
//
// A reader that becomes active (its first message under a new pin) puts
// the consumer back at its acknowledged position (the reset API) if
// anything was delivered beyond it, to a reader that died or to this one
// before: the values after the last one acknowledged then come again, in
// stream order, before any later one. Deliveries made before the reset
// still arrive first; the first after it has consumer sequence 1, and the
// reader drops what comes before that one.

const (
	// durableGroup is the priority group every durable watcher pulls in.
	durableGroup = "herald"
	// ackEvery and ackBatch say when the active reader acknowledges what
	// its application read: after ackBatch values, or ackEvery after the
	// last ack. What was read and not acknowledged comes again to the next
	// reader after a crash or a takeover.
	ackEvery = 100 * time.Millisecond
	ackBatch = 256
	// durableAckWait is how long the server waits for an ack before it
	// delivers a value again to the same reader: long, since a reader
	// acknowledges only what its application read, and drops a value
	// delivered again that it handled.
	durableAckWait = time.Hour
)

// durable is a durable watcher's state. The feed goroutine owns pin,
// syncing and epoch; the rest is safe for concurrent use.
type durable struct {
	name     string
	takeover time.Duration

	pin     string // the pin under which this reader is active; "" standing by
	syncing bool   // a reset was asked: drop deliveries made before it

	acks *acks
	keep *keeper

	// readMu serializes hand-outs (they go in stream order, one at a
	// time) and guards last: the value the last Next returned, done at
	// the next Next call.
	readMu sync.Mutex
	last   uint64

	// redeliverTo: the values up to this stream sequence may have been
	// handed out before, by another reader (see keeper.activate).
	redeliverTo atomic.Uint64
	redelivered atomic.Uint64

	// rewound says where the feed was last rewound, and the epoch that
	// began then: a value queued before, at or after that position, comes
	// again after it; the reader drops it (see stale).
	rewound atomic.Pointer[rewind]

	// ending is set once Stop has stopped the feed: from then on, the
	// last value done hands the position over (see afterStop).
	ending     atomic.Bool
	finishOnce sync.Once
	finished   chan struct{} // closed once the position is handed over
	timer      *time.Timer   // the bound on the hand-over after Stop
	// patient is set for a group member's partition moving to another
	// member: the hand-over waits for the handlers, without the bound
	// (see Member), until arm sets it.
	patient atomic.Bool
	timerMu sync.Mutex // guards timer
}

// validDurable checks a durable name: ASCII letters, digits, '-' and '_'.
func validDurable(name string) error {
	if len(name) > maxNameLength {
		return fmt.Errorf("%w: durable name longer than %d bytes", ErrInvalidName, maxNameLength)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
		if !ok {
			return fmt.Errorf("%w: durable name %q holds %q (allowed: letters, digits, '-', '_')", ErrInvalidName, name, r)
		}
	}
	return nil
}

// bindDurable returns the stream sequence after the durable position
// named by o.Durable, created with o if it is missing, and the watcher's
// durable state, bound to it: its acks and its keeper, on the topic's
// bucket of durable records.
func (t *Topic[T]) bindDurable(ctx context.Context, o WatchOptions) (uint64, *durable, error) {
	takeover := o.Takeover
	if takeover == 0 {
		takeover = DefaultTakeover
	}
	cons, err := t.stream.Consumer(ctx, o.Durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		cons, err = t.stream.CreateConsumer(ctx, t.durableConfig(o, takeover))
		if errors.Is(err, jetstream.ErrConsumerExists) {
			cons, err = t.stream.Consumer(ctx, o.Durable) // made meanwhile, by another process
		}
	}
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil, fmt.Errorf("%w: %q", ErrStreamGone, t.streamID)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("natsbridge: topic %q: durable %q: %w", t.name, o.Durable, err)
	}
	info := cons.CachedInfo()
	if c := info.Config; c.PriorityPolicy != jetstream.PriorityPolicyPinned || c.AckPolicy != jetstream.AckAllPolicy {
		return 0, nil, fmt.Errorf("%w: consumer %q of stream %q is not a durable watcher's", ErrNameConflict, o.Durable, t.streamID)
	}
	if ttl := info.Config.PinnedTTL; ttl > 0 {
		takeover = ttl // the position's, set when it was made
	}
	kv, created, err := t.durablesAt(ctx)
	if err != nil {
		return 0, nil, err
	}
	d := &durable{name: o.Durable, takeover: takeover, acks: newAcks(t.js.Conn()), finished: make(chan struct{})}
	d.keep = newKeeper(kv, t.keyPrefix+o.Durable, t.js.Conn(), t.nextSubject(o.Durable), takeover, d.acks, newLimitedLog(t.log.With(slog.String("durable", o.Durable))))
	d.keep.unpin = func(ctx context.Context, pin string) error { return t.unpinIf(ctx, o.Durable, pin) }
	d.keep.remake = t.remakeDurables
	d.keep.lost = func(ctx context.Context, key string) (bool, error) { return t.recordLost(ctx, d.keep.kv, key, created) }
	return info.AckFloor.Stream + 1, d, nil
}

// durableConfig returns the configuration of the durable consumer that
// holds the position o.Durable, made at o.From with the takeover time.
func (t *Topic[T]) durableConfig(o WatchOptions, takeover time.Duration) jetstream.ConsumerConfig {
	cfg := jetstream.ConsumerConfig{
		Durable:        o.Durable,
		Description:    "herald durable watcher of " + t.name,
		DeliverPolicy:  jetstream.DeliverNewPolicy,
		AckPolicy:      jetstream.AckAllPolicy,
		AckWait:        durableAckWait,
		MaxDeliver:     -1,
		MaxAckPending:  -1,
		PriorityPolicy: jetstream.PriorityPolicyPinned,
		PriorityGroups: []string{durableGroup},
		PinnedTTL:      takeover,
		Metadata:       map[string]string{metaTopic: t.name},
	}
	if o.From > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, o.From
	}
	return cfg
}

// durablesBucket names the key-value bucket that holds the records of a
// topic's durable positions (see keeper).
func durablesBucket(stream string) string { return "herald_" + stream }

// durables returns the topic's bucket of durable records (see keeper),
// creating it, with the stream's replicas, if it is missing.
func (t *Topic[T]) durables(ctx context.Context) (jetstream.KeyValue, error) {
	kv, _, err := t.durablesAt(ctx)
	return kv, err
}

// durablesAt is durables, and returns when the bucket was made, as its
// stream says: a bucket made again since is another (see recordLost).
func (t *Topic[T]) durablesAt(ctx context.Context) (jetstream.KeyValue, time.Time, error) {
	t.kvMu.Lock()
	defer t.kvMu.Unlock()
	if t.kv != nil {
		return t.kv, t.kvCreated, nil
	}
	bucket := t.bucket
	kv, err := t.js.KeyValue(ctx, bucket)
	made := false
	if err == nil && t.markOwed {
		made = true // by this topic, which failed to mark it: the mark is still owed
	} else if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = t.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      bucket,
			Description: "herald durable positions of topic " + t.name,
			History:     1,
			Storage:     jetstream.FileStorage,
			Replicas:    max(t.stream.CachedInfo().Config.Replicas, 1),
		})
		made = err == nil
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = t.js.KeyValue(ctx, bucket) // made meanwhile, by another process
		}
	}
	if made {
		// Made again after a deletion, if positions existed.
		var marked bool
		marked, err = t.markRemade(ctx, kv)
		t.markOwed = err != nil
		if marked {
			t.log.Warn("natsbridge: the bucket of durable records was gone (deleted by hand?): made again, the records count as lost", slog.String("bucket", bucket))
		}
	}
	var created time.Time
	if err == nil {
		var s jetstream.Stream
		if s, err = t.js.Stream(ctx, "KV_"+bucket); err == nil {
			created = s.CachedInfo().Created
		}
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("natsbridge: topic %q: durable records (key-value bucket %q): %w", t.name, bucket, err)
	}
	t.kv, t.kvCreated = kv, created
	return kv, created, nil
}

// remakeDurables returns the topic's bucket of durable records, made
// again if it is gone (deleted by hand): stale is the handle that found
// it gone.
func (t *Topic[T]) remakeDurables(ctx context.Context, stale jetstream.KeyValue) (jetstream.KeyValue, error) {
	t.kvMu.Lock()
	if t.kv == stale {
		t.kv = nil
	}
	t.kvMu.Unlock()
	return t.durables(ctx)
}

// Delete deletes the topic from the server: its stream, and the
// key-value bucket that holds the records of its durable positions
// (herald_<stream>), if there is one. Watchers and mirrors of the topic
// end (their Err wraps ErrStreamGone), publishers count what they send
// as Failed. A stream deleted with jetstream directly leaves that bucket
// behind. ctx bounds the requests; Delete panics on a nil ctx.
func (t *Topic[T]) Delete(ctx context.Context) error {
	mustContext(ctx)
	if err := t.js.DeleteStream(ctx, t.streamID); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("natsbridge: topic %q: delete stream: %w", t.name, err)
	}
	if err := t.js.DeleteKeyValue(ctx, t.bucket); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("natsbridge: topic %q: delete durable records: %w", t.name, err)
	}
	return nil
}

// DeleteDurable deletes the durable position name (WatchOptions.Durable)
// from the server: a watcher that uses it ends (its Err says why), and a
// later Watch with that name begins again, as a new one, with its From.
// A durable position lives until it is deleted so, or its stream is. ctx
// bounds the request; DeleteDurable panics on a nil ctx.
func (t *Topic[T]) DeleteDurable(ctx context.Context, name string) error {
	mustContext(ctx)
	if err := validDurable(name); err != nil {
		return err
	}
	if err := t.stream.DeleteConsumer(ctx, name); err != nil {
		return fmt.Errorf("natsbridge: topic %q: delete durable %q: %w", t.name, name, err)
	}
	kv, err := t.durables(ctx)
	if err == nil {
		err = kv.Purge(ctx, t.keyPrefix+name)
	}
	if err != nil {
		return fmt.Errorf("natsbridge: topic %q: delete durable %q's record: %w", t.name, name, err)
	}
	return nil
}

// A rewind is where the feed was rewound (from: the values from it on
// come again) and the epoch of the consumer's deliveries that began with
// the reset that followed.
type rewind struct{ from, epoch uint64 }

// stale reports whether a value taken from the watcher's queue, at seq
// and of epoch, comes again after the last rewind of the feed (see
// feed.rewindTo): it is not to be handed out, or it would be twice, and
// out of order.
func (d *durable) stale(seq, epoch uint64) bool {
	r := d.rewound.Load()
	return r != nil && seq >= r.from && epoch < r.epoch
}
