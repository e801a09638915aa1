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
		// Never written, or deleted (or purged): a deleted record leaves
		// its mark in the bucket's history.
		if _, herr := k.kv.History(ctx, k.key); herr == nil {
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

// remakeBucket makes the bucket of records again, if it is gone, and
// writes this position's record as lost in it, so that whichever reader
// takes the position over next, this one or another, waits out a lease
// and counts what the consumer delivered as redelivered (see activate).
func (k *keeper) remakeBucket(ctx context.Context) error {
	kv, made, err := k.remake(ctx, k.kv)
	if err != nil {
		return err
	}
	k.kv = kv
	if !made {
		return nil
	}
	k.log.warn("natsbridge: the bucket of durable records was gone (deleted by hand?): made again, this position's record lost")
	b, err := json.Marshal(record{Owner: lostOwner})
	if err != nil {
		return err
	}
	if _, err := kv.Create(ctx, k.key, b); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return err
	}
	return nil
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
