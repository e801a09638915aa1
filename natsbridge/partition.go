package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"
)

// MaxPartitions is the most partitions a Partitioned topic has.
const MaxPartitions = 1024

// Metadata keys a partition's stream records beside the topic's.
const (
	metaPartition  = "herald.partition"
	metaPartitions = "herald.partitions"
)

// Partitioned is a topic of T split into partitions: P streams, one per
// partition, each with a leader of its own, which a cluster spreads over
// its nodes, so that writes (and reads) grow with the nodes rather than
// stop at one stream's leader. A value goes to the partition its key
// picks (see Partition), so all the values of one key are in one
// partition, in one order; a consumer group (Join) shares the partitions
// among its live members, and each member's handle.Pool handles its
// partitions' keys in parallel.
//
// Each partition is a topic with a topic's guarantees (one order, a
// publisher's order across retries, restarts and failover, counted fates),
// stored in a stream named after the topic with "$p" and the partition's
// number ("shop_orders$p3"), on the subject <topic>.$p<n>, which no topic
// name can be. The number of partitions is fixed when the topic is made:
// a key's partition depends on it, so changing it would move keys, and
// their order with them. A partitioned topic is safe for concurrent use;
// its zero value is not usable: get one from NewPartitioned, and call
// Shutdown when done with it.
type Partitioned[T any] struct {
	name  string
	key   func(T) string
	parts []*Topic[T]
	js    jetstream.JetStream
}

// PartitionOptions configures a partitioned topic.
type PartitionOptions struct {
	// Topic configures each partition's stream, as TopicOptions configures
	// a topic's; its Schema and Update apply to every partition.
	Topic TopicOptions
	// Partitions is how many partitions the topic has, fixed when it is
	// made. Zero opens an existing partitioned topic with the number it
	// was made with; another number than that is ErrConfigDiffers, naming
	// both. At most MaxPartitions.
	Partitions int
}

// NewPartitioned opens the partitioned topic name on js, creating its
// partitions' streams if they are missing. key returns a value's
// partition key: the values of one key go to one partition, in order
// (see Partition). It returns the errors NewTopic does, for each
// partition, and ErrConfigDiffers if o.Partitions differs from the number
// the topic was made with. It panics on a nil ctx.
func NewPartitioned[T any](ctx context.Context, js jetstream.JetStream, name string, c Codec[T], key func(T) string, o PartitionOptions) (*Partitioned[T], error) {
	mustContext(ctx)
	if js == nil || c == nil || key == nil {
		return nil, errors.New("natsbridge: nil JetStream, Codec or key function")
	}
	if err := validName(name); err != nil {
		return nil, err
	}
	if o.Partitions < 0 || o.Partitions > MaxPartitions {
		return nil, fmt.Errorf("natsbridge: PartitionOptions.Partitions %d outside [0, %d]", o.Partitions, MaxPartitions)
	}
	if err := checkTopicOptions(o.Topic); err != nil {
		return nil, err
	}
	n, err := partitionsOf(ctx, js, name, o.Partitions)
	if err != nil {
		return nil, err
	}
	pt := &Partitioned[T]{name: name, key: key, js: js}
	streams := make([]string, n)
	for i := range n {
		streams[i] = partitionStream(name, i)
	}
	for i := range n {
		t := topicFor(js, name, c, o.Topic)
		t.name = name + ".$p" + strconv.Itoa(i)
		t.streamID = partitionStream(name, i)
		t.shutErr = fmt.Errorf("natsbridge: partitioned topic %q is shut down (Shutdown); open it again with NewPartitioned: %w", name, ErrClosed)
		t.bucket, t.keyPrefix, t.bucketStreams = durablesBucket(streamOf(name)), "p"+strconv.Itoa(i)+".", streams
		meta := map[string]string{metaTopic: name, metaPartition: strconv.Itoa(i), metaPartitions: strconv.Itoa(n)}
		if t, err = openTopic(ctx, t, o.Topic, meta); err != nil {
			_ = pt.Shutdown(context.Background())
			return nil, err
		}
		pt.parts = append(pt.parts, t)
	}
	return pt, nil
}

// streamOf returns the stream name of the topic name: its dots become
// underscores.
func streamOf(name string) string { return strings.ReplaceAll(name, ".", "_") }

// partitionStream returns the stream name of partition i of topic name.
func partitionStream(name string, i int) string { return streamOf(name) + "$p" + strconv.Itoa(i) }

// partitionsOf returns the number of partitions of topic name: the one
// its first partition's stream records, asked must agree with it; or, if
// it has no partitions yet, asked.
func partitionsOf(ctx context.Context, js jetstream.JetStream, name string, asked int) (int, error) {
	s, err := js.Stream(ctx, partitionStream(name, 0))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		if asked == 0 {
			return 0, fmt.Errorf("natsbridge: partitioned topic %q does not exist: set PartitionOptions.Partitions to make it", name)
		}
		return asked, nil
	}
	if err != nil {
		return 0, fmt.Errorf("natsbridge: partitioned topic %q: %w", name, err)
	}
	made, err := strconv.Atoi(s.CachedInfo().Config.Metadata[metaPartitions])
	if err != nil || made < 1 {
		return 0, fmt.Errorf("%w: stream %q records no number of partitions", ErrNameConflict, partitionStream(name, 0))
	}
	if asked != 0 && asked != made {
		return 0, fmt.Errorf("%w: partitioned topic %q: Partitions: %d asked, %d on the topic (the number is fixed when the topic is made: a key's partition depends on it)",
			ErrConfigDiffers, name, asked, made)
	}
	return made, nil
}

// Name returns the partitioned topic's name.
func (pt *Partitioned[T]) Name() string { return pt.name }

// Partitions returns the number of partitions.
func (pt *Partitioned[T]) Partitions() int { return len(pt.parts) }

// Partition returns the partition of a value whose key is key:
// (Murmur2(key) & 0x7fffffff) % Partitions(), as Kafka's default
// partitioner computes it, so that a program in any language with
// Kafka's murmur2 routes a key to the same partition.
func (pt *Partitioned[T]) Partition(key string) int { return partitionOf(key, len(pt.parts)) }

// Key returns v's partition key, by the key function the topic was opened
// with; a key function that panics is an error.
func (pt *Partitioned[T]) Key(v T) (k string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: the partition key function panicked with a value of type %T", ErrCodec, r)
		}
	}()
	return pt.key(v), nil
}

// Topic returns partition i as a topic of its own: to watch it alone, or
// to inspect its stream. It panics if i is not a partition.
func (pt *Partitioned[T]) Topic(i int) *Topic[T] { return pt.parts[i] }

// Shutdown ends everything the partitioned topic made (publishers,
// members), as Topic.Shutdown does for each partition. See Topic.Shutdown.
func (pt *Partitioned[T]) Shutdown(ctx context.Context) error {
	mustContext(ctx)
	ctx, cancel := withEnd(ctx)
	defer cancel()
	var first error
	for _, t := range pt.parts {
		if err := t.Shutdown(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Delete deletes the partitioned topic from the server: every partition's
// stream and the bucket of its durable records and groups.
func (pt *Partitioned[T]) Delete(ctx context.Context) error {
	mustContext(ctx)
	for _, t := range pt.parts {
		if err := t.js.DeleteStream(ctx, t.streamID); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("natsbridge: partitioned topic %q: delete stream %q: %w", pt.name, t.streamID, err)
		}
	}
	if err := pt.js.DeleteKeyValue(ctx, durablesBucket(streamOf(pt.name))); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("natsbridge: partitioned topic %q: delete its records: %w", pt.name, err)
	}
	return nil
}

// PartitionedPublisher publishes values to the partitions of a
// partitioned topic: one Publisher per partition, each keeping its
// partition's order and counts. It is safe for concurrent use; get one
// from Partitioned.Publisher and call Shutdown when done with it.
type PartitionedPublisher[T any] struct {
	pt      *Partitioned[T]
	pubs    []*Publisher[T]
	invalid atomic.Uint64 // values whose key function panicked
}

// Publisher returns a publisher of the partitioned topic, made of one
// Publisher per partition, each configured by o (see Topic.Publisher).
// It starts one goroutine per partition, which Shutdown ends.
func (pt *Partitioned[T]) Publisher(o PublisherOptions) (*PartitionedPublisher[T], error) {
	pp := &PartitionedPublisher[T]{pt: pt}
	for _, t := range pt.parts {
		p, err := t.Publisher(o)
		if err != nil {
			_ = pp.Shutdown(context.Background())
			return nil, err
		}
		pp.pubs = append(pp.pubs, p)
	}
	return pp, nil
}

// route returns the publisher of v's partition.
func (pp *PartitionedPublisher[T]) route(v T) (*Publisher[T], error) {
	k, err := pp.pt.Key(v)
	if err != nil {
		pp.invalid.Add(1)
		return nil, err
	}
	return pp.pubs[pp.pt.Partition(k)], nil
}

// Publish publishes v to its key's partition, as Publisher.Publish does.
// A key function that panics is an error wrapping ErrCodec, counted in
// Stats().Invalid.
func (pp *PartitionedPublisher[T]) Publish(ctx context.Context, v T) error {
	mustContext(ctx)
	p, err := pp.route(v)
	if err != nil {
		return err
	}
	return p.Publish(ctx, v)
}

// TryPublish publishes v to its key's partition if its window has room,
// as Publisher.TryPublish does.
func (pp *PartitionedPublisher[T]) TryPublish(v T) (bool, error) {
	p, err := pp.route(v)
	if err != nil {
		return false, err
	}
	return p.TryPublish(v)
}

// Shutdown shuts every partition's publisher down, as Publisher.Shutdown
// does, and returns the first error.
func (pp *PartitionedPublisher[T]) Shutdown(ctx context.Context) error {
	mustContext(ctx)
	var first error
	for _, p := range pp.pubs {
		if err := p.Shutdown(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Stats returns the counters of the partitions' publishers, added up,
// with the values whose key function panicked in Invalid.
func (pp *PartitionedPublisher[T]) Stats() PublisherStats {
	var s PublisherStats
	for _, p := range pp.pubs {
		s = s.add(p.Stats())
	}
	s.Invalid += pp.invalid.Load()
	return s
}
