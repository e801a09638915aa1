package natsbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A durable position's record lost: deleted or purged by hand, or its
// bucket deleted. Nobody knows then who read before, up to where, or
// until when: the next reader assumes the worst (see keeper.activate).

// read returns the record and its revision, a zero record and revision 0
// if there is none, a record owned by lostOwner and revision 0 if it was
// deleted; it makes the bucket again if it is gone (see remakeBucket).
func (k *keeper) read(ctx context.Context) (record, uint64, error) {
	e, err := k.kv.Get(ctx, k.key)
	if bucketGone(err) && k.remake != nil {
		if err = k.remakeBucket(ctx); err == nil {
			e, err = k.kv.Get(ctx, k.key)
		}
	}
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		// Never written, or lost: deleted or purged (the bucket keeps a
		// marker), or its bucket made again (see Topic.recordLost).
		lost := false
		if k.lost != nil {
			lost, err = k.lost(ctx, k.key)
		}
		if err != nil {
			return record{}, 0, fmt.Errorf("natsbridge: durable %q: read its record: %w", k.key, err)
		}
		if lost {
			return record{Owner: lostOwner}, 0, nil
		}
		return record{}, 0, nil
	}
	if err != nil {
		return record{}, 0, fmt.Errorf("natsbridge: durable %q: read its record: %w", k.key, err)
	}
	var rec record
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		// Not herald's record (or a damaged one): take it over, counting
		// nothing as redelivered that no record says was handed out.
		return record{}, e.Revision(), nil
	}
	return rec, e.Revision(), nil
}

// lostOwner is the owner of a record that was lost: deleted or purged by
// hand, or its bucket deleted (see keeper.read and activate).
const lostOwner = "(lost)"

// bucketGone reports whether err says the bucket of records is gone: its
// stream deleted, so that nothing answers its requests.
func bucketGone(err error) bool {
	return errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

// remakeBucket makes the bucket of records again, if it is gone: the
// topic marks it made again (see Topic.durables), so that whichever
// reader takes a position over next, this one or another, takes its
// record for lost (see activate).
func (k *keeper) remakeBucket(ctx context.Context) error {
	kv, err := k.remake(ctx, k.kv)
	if err != nil {
		return err
	}
	k.kv = kv
	return nil
}

// remadeKey is the key of the mark a topic leaves in a bucket of records
// it made again while durable positions of its stream existed: a durable
// name holds no dot, and a partition's keys begin with "p<n>.".
const remadeKey = "herald.remade"

// recordLost reports whether the record at key in the topic's bucket was
// lost: the bucket holds a deletion or purge of it as its last entry, or
// the mark of a bucket made again (see durables), or it is not the bucket
// made at created, that the reader began with (made again since, by
// whichever process: its mark may not be written yet).
func (t *Topic[T]) recordLost(ctx context.Context, kv jetstream.KeyValue, key string, created time.Time) (bool, error) {
	if _, err := kv.Get(ctx, remadeKey); err == nil {
		return true, nil
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, err
	}
	s, err := t.js.Stream(ctx, "KV_"+t.bucket)
	if err != nil {
		return false, err
	}
	if !s.CachedInfo().Created.Equal(created) {
		return true, nil
	}
	m, err := s.GetLastMsgForSubject(ctx, "$KV."+t.bucket+"."+key)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil // never written
	}
	if err != nil {
		return false, err
	}
	op := m.Header.Get("KV-Operation")
	return op == "DEL" || op == "PURGE", nil
}

// markRemade leaves the mark of a bucket made again (remadeKey) in kv,
// just made, if a stream whose records it holds (the topic's, or every
// partition's of a partitioned topic) has durable consumers that delivered
// values: their records were in the bucket before. (A position bound for
// the first time made its consumer before the bucket, and delivered
// nothing yet; its delivered stream sequence starts at its From, less
// one, so it is its count of deliveries that says; a position handed over
// cleanly has its count back at 0, and its record owes nobody a wait.)
func (t *Topic[T]) markRemade(ctx context.Context, kv jetstream.KeyValue) (marked bool, err error) {
	streams := []jetstream.Stream{t.stream}
	if len(t.bucketStreams) > 0 {
		streams = streams[:0]
		for _, name := range t.bucketStreams {
			s, err := t.js.Stream(ctx, name)
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				continue // a partition made after this one: nothing delivered
			}
			if err != nil {
				return false, err
			}
			streams = append(streams, s)
		}
	}
	for _, s := range streams {
		delivered, err := deliveredDurables(ctx, s)
		if err != nil {
			return false, err
		}
		if delivered {
			_, err := kv.Put(ctx, remadeKey, []byte(time.Now().UTC().Format(time.RFC3339Nano)))
			return err == nil, err
		}
	}
	return false, nil
}

// deliveredDurables reports whether stream s has a durable position's
// consumer (see durablePosition) that delivered values since it was made
// or reset.
func deliveredDurables(ctx context.Context, s jetstream.Stream) (bool, error) {
	list := s.ListConsumers(ctx)
	delivered := false
	for info := range list.Info() { // read to its end: the lister's goroutine ends so
		delivered = delivered || durablePosition(info.Config) && info.Delivered.Consumer > 0
	}
	return delivered, list.Err()
}

// durablePosition reports whether c is the configuration of a durable
// watcher's consumer (see Topic.durableConfig), not another's.
func durablePosition(c jetstream.ConsumerConfig) bool {
	return c.Durable != "" && c.PriorityPolicy == jetstream.PriorityPolicyPinned && c.AckPolicy == jetstream.AckAllPolicy
}

// assumeLost makes a lost record (owned by lostOwner) the worst it may
// stand for: a reader that may hand out values until until, and that
// handed out all the consumer delivered.
func (r *record) assumeLost(until time.Time, delivered uint64) {
	if r.Owner != lostOwner {
		return
	}
	r.Until = max(r.Until, until.UnixNano())
	r.Handed = max(r.Handed, delivered)
}

// worstLocked makes rec, the record this reader takes over, the worst it
// may stand for: a lost record's (assumeLost), and at least what this
// reader handed out itself, in an earlier turn: a record written over by
// hand may say less, and its mark is what this reader and the one after
// it count as redelivered.
func (k *keeper) worstLocked(rec *record, now time.Time, delivered uint64) {
	rec.assumeLost(now.Add(k.takeover), delivered)
	rec.Handed = max(rec.Handed, k.acks.handedEver())
}
