package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// maxNameLength bounds a topic name, well below the server's limits on
// subjects and stream names; maxSchemaLength a schema name.
const (
	maxNameLength   = 200
	maxSchemaLength = 256
)

// Topic is a typed stream of values of T on NATS JetStream, shared by every
// process that opens it by the same name. It is safe for concurrent use. Its
// zero value is not usable: get one from NewTopic, and call Shutdown when
// done with it.
//
// A Topic owns what it makes: its Publishers, Watchers and Mirrors. Each has
// its own end (Publisher.Shutdown, Watcher.Stop, the mirror's
// Broadcaster.Shutdown); Topic.Shutdown ends all that are left.
type Topic[T any] struct {
	js       jetstream.JetStream
	stream   jetstream.Stream
	name     string // the subject
	streamID string // the stream's name
	created  time.Time
	// duplicates is the stream's window for dropping a message id it
	// holds already: a publisher's default delivery timeout.
	duplicates time.Duration
	codec      Codec[T]
	id         identity // what the stream records of the values it carries
	heartbeat  time.Duration
	readAhead  int
	log        *slog.Logger
	// batched reports whether the stream takes batched publishes, which
	// publishers send: false for a stream opened as it is that an
	// earlier herald (or another program) made without them.
	batched bool

	shutErr error // what Watch, Mirror and Publisher return after Shutdown

	mu     sync.Mutex // guards closed, owned
	closed bool
	// owned holds what Shutdown ends: everything made and not yet ended
	// by its own end call. The value reports whether it ended by itself
	// (its stream deleted): it may still hold goroutines that Shutdown
	// ends, but it no longer counts in Stats().Live.
	owned map[owned]bool

	gaps     atomic.Uint64
	poisoned atomic.Uint64
	restarts atomic.Uint64

	kvMu sync.Mutex         // guards kv, kvCreated and markOwed
	kv   jetstream.KeyValue // the bucket of durable records, once a durable watcher needed it
	// kvCreated is when kv's bucket was made, as its stream says.
	kvCreated time.Time
	// markOwed: this topic made the bucket and failed to mark it made
	// again (see markRemade); the next call of durables marks it.
	markOwed bool
	// bucket names that bucket, and its keys begin with keyPrefix: a
	// partition's durable records live in its partitioned topic's bucket.
	bucket, keyPrefix string
	// bucketStreams names the streams whose records the bucket holds, if
	// not this topic's alone: every partition's of a partitioned topic.
	bucketStreams []string
}

// owned is what a Topic ends in Shutdown: a Publisher, a Watcher or a
// mirror.
type owned interface {
	shutdown(ctx context.Context) error
}

// TopicStats is a snapshot of a topic's counters, summed over the watchers
// and mirrors it made, stopped ones included.
type TopicStats struct {
	// Gaps counts values that retention (or a deletion) removed from the
	// stream before a watcher or mirror read them.
	Gaps uint64
	// Poisoned counts messages the codec could not decode. Each was
	// skipped and counted, and logged with the others of its burst (see
	// TopicOptions.Logger); the watcher went on.
	Poisoned uint64
	// Restarts counts consumers created again after being lost (a server
	// restart, a lost connection, a message lost in transit). Each
	// resumed after the last value read; none of these loses a value. A
	// message is taken for lost in transit when two checks of an idle
	// consumer, a heartbeat apart, find the server ahead of the watcher by
	// the same messages.
	Restarts uint64
	// Live is the number of publishers, watchers and mirrors not yet
	// ended: shut down, stopped, or ended by the deletion of the stream.
	Live int
}

// NewTopic opens the topic name on js, creating its stream or updating it
// to o (TopicOptions says which changes the server refuses). The stream is
// named after the topic (dots become underscores) and captures exactly the
// subject name: no other topic can read or write it.
//
// name is a dot-separated list of tokens, each made of ASCII letters,
// digits, '-' and '_' (NATS wildcards, whitespace and empty tokens are
// refused with ErrInvalidName). NewTopic returns ErrTypeMismatch if the
// stream carries another Go type than T, and ErrNameConflict if the stream
// exists with other subjects. ctx bounds the calls to the server; one the
// server leaves unanswered (a node that died, a connection cut) is made
// again after 5 s, as long as ctx lasts (three attempts in all for a ctx
// without a deadline).
//
// Credentials and TLS come with the caller's connection; NewTopic never
// logs them. It panics on a nil ctx.
func NewTopic[T any](ctx context.Context, js jetstream.JetStream, name string, c Codec[T], o TopicOptions) (*Topic[T], error) {
	mustContext(ctx)
	if js == nil {
		return nil, errors.New("natsbridge: nil JetStream")
	}
	if c == nil {
		return nil, errors.New("natsbridge: nil Codec")
	}
	if err := validName(name); err != nil {
		return nil, err
	}
	if err := checkTopicOptions(o); err != nil {
		return nil, err
	}
	return openTopic(ctx, topicFor(js, name, c, o), o, nil)
}

// openTopic opens t's stream, made with o's configuration and the extra
// metadata meta if it is missing (a partition's: see Partitioned).
func openTopic[T any](ctx context.Context, t *Topic[T], o TopicOptions, meta map[string]string) (*Topic[T], error) {
	name := t.name
	cfg := t.streamConfig(o)
	for k, v := range meta {
		cfg.Metadata[k] = v
	}
	var s jetstream.Stream
	var asked bool
	err := answered(ctx, func(ctx context.Context) (err error) {
		s, asked, err = t.openStream(ctx, o, cfg)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrTypeMismatch) || errors.Is(err, ErrNameConflict) || errors.Is(err, ErrConfigDiffers) {
			return nil, err
		}
		return nil, fmt.Errorf("natsbridge: topic %q: %w", name, err)
	}
	t.batched = s.CachedInfo().Config.AllowBatchPublish
	if !t.batched && asked {
		// A server that does not know the setting drops it.
		return nil, fmt.Errorf("natsbridge: topic %q: stream %q does not take batched publishes, which publishers send: nats-server 2.14 or later is needed", name, cfg.Name)
	}
	t.stream = s
	t.created = s.CachedInfo().Created
	t.duplicates = s.CachedInfo().Config.Duplicates
	return t, nil
}

// topicFor returns the topic name on js, with o's defaults filled in and
// no stream yet.
func topicFor[T any](js jetstream.JetStream, name string, c Codec[T], o TopicOptions) *Topic[T] {
	t := &Topic[T]{
		shutErr:   fmt.Errorf("natsbridge: topic %q is shut down (Topic.Shutdown); open it again with NewTopic: %w", name, ErrClosed),
		js:        js,
		name:      name,
		streamID:  streamOf(name),
		codec:     c,
		id:        identityOf(c, o.Schema),
		heartbeat: o.Heartbeat,
		readAhead: o.ReadAhead,
		log:       o.Logger,
		owned:     make(map[owned]bool),
	}
	t.bucket = durablesBucket(t.streamID)
	if t.heartbeat == 0 {
		t.heartbeat = DefaultHeartbeat
	}
	if t.readAhead == 0 {
		t.readAhead = DefaultReadAhead
	}
	if t.log == nil {
		t.log = slog.Default()
	}
	t.log = t.log.With(slog.String("topic", name))
	return t
}

func (t *Topic[T]) streamConfig(o TopicOptions) jetstream.StreamConfig {
	limit := func(n int64) int64 {
		if n == 0 {
			return -1 // the server's "no limit"
		}
		return n
	}
	cfg := jetstream.StreamConfig{
		Name:        t.streamID,
		Description: "herald topic " + t.name,
		Subjects:    []string{t.name},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      o.MaxAge,
		MaxMsgs:     limit(o.MaxMsgs),
		MaxBytes:    limit(o.MaxBytes),
		Storage:     o.Storage,
		Replicas:    max(o.Replicas, 1),
		// Zero asks for the server's default window, which it shortens
		// to MaxAge (a window longer than MaxAge is refused).
		Duplicates: o.Duplicates,
		Metadata:   t.id.metadata(t.name),
		// Publishers send fast batches (see batch.go).
		AllowBatchPublish: true,
	}
	return cfg
}

// validName checks a topic name: dot-separated, non-empty tokens of ASCII
// letters, digits, '-' and '_'. That excludes the wildcards '*' and '>',
// whitespace and every character a stream name may not hold, once dots are
// replaced.
func validName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty topic name", ErrInvalidName)
	}
	if len(name) > maxNameLength {
		return fmt.Errorf("%w: topic name longer than %d bytes", ErrInvalidName, maxNameLength)
	}
	for i, tok := range strings.Split(name, ".") {
		if tok == "" {
			return fmt.Errorf("%w: topic name %q has an empty token (#%d)", ErrInvalidName, name, i+1)
		}
		for _, r := range tok {
			ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
			if !ok {
				return fmt.Errorf("%w: topic name %q holds %q (allowed: letters, digits, '-', '_', and '.' between tokens)", ErrInvalidName, name, r)
			}
		}
	}
	return nil
}

// Name returns the topic's name, which is also its subject.
func (t *Topic[T]) Name() string { return t.name }

// Stream returns the name of the JetStream stream that holds the topic's
// values: the topic's name with its dots replaced by underscores. Use it
// to address the stream with jetstream directly (to inspect or delete it).
func (t *Topic[T]) Stream() string { return t.streamID }

// Stats returns a snapshot of the topic's counters.
func (t *Topic[T]) Stats() TopicStats {
	t.mu.Lock()
	live := 0
	for _, ended := range t.owned {
		if !ended {
			live++
		}
	}
	t.mu.Unlock()
	return TopicStats{
		Gaps:     t.gaps.Load(),
		Poisoned: t.poisoned.Load(),
		Restarts: t.restarts.Load(),
		Live:     live,
	}
}

// Shutdown ends every Publisher, Watcher and Mirror the topic made that is
// still live, and returns once all have ended: nil, ctx.Err() if ctx ends
// first (what was then abandoned is counted as each one documents), or
// ErrUnconfirmed if a publisher's values ended unconfirmed. Once it has
// begun, Watch, Mirror and Publisher return ErrClosed. The stream stays on
// the server (see Delete).
func (t *Topic[T]) Shutdown(ctx context.Context) error {
	mustContext(ctx)
	ctx, cancel := withEnd(ctx)
	defer cancel()
	t.mu.Lock()
	t.closed = true
	all := make([]owned, 0, len(t.owned))
	for o := range t.owned {
		all = append(all, o)
	}
	t.mu.Unlock()
	var first error
	for _, o := range all {
		if err := o.shutdown(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// adopt records o as live, or reports ErrClosed once Shutdown has begun.
func (t *Topic[T]) adopt(o owned) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return t.shutErr
	}
	t.owned[o] = false
	return nil
}

// retire records that o ended by itself: it leaves Stats().Live, and
// Shutdown still ends what it holds.
func (t *Topic[T]) retire(o owned) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.owned[o]; ok {
		t.owned[o] = true
	}
}

// forget removes o once it has ended.
func (t *Topic[T]) forget(o owned) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.owned, o)
}

// isClosed reports whether Shutdown has begun.
func (t *Topic[T]) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// lastHeld returns the sequence of the last message the stream holds, or
// 0 if it holds none.
func (t *Topic[T]) lastHeld(ctx context.Context) (uint64, error) {
	msg, err := t.stream.GetLastMsgForSubject(ctx, t.name)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return 0, nil
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return 0, fmt.Errorf("%w: %q", ErrStreamGone, t.streamID)
	case err != nil:
		return 0, fmt.Errorf("natsbridge: topic %q: last message: %w", t.name, err)
	}
	return msg.Sequence, nil
}

// streamState returns the stream's current information, or ErrStreamGone
// if it was deleted or replaced since NewTopic.
func (t *Topic[T]) streamState(ctx context.Context) (*jetstream.StreamInfo, error) {
	info, err := t.stream.Info(ctx)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("%w: %q", ErrStreamGone, t.streamID)
	}
	if err != nil {
		return nil, fmt.Errorf("natsbridge: topic %q: stream info: %w", t.name, err)
	}
	if !info.Created.Equal(t.created) {
		return nil, fmt.Errorf("%w: %q was deleted and created again", ErrStreamGone, t.streamID)
	}
	return info, nil
}
