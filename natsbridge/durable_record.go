package natsbridge

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// The record beside a durable position, in the topic's bucket: who owns
// the position, how far any reader may have handed values out, the lease
// of its owner, and the deaths of the readers before it (see keeper); and
// how a reader becomes its owner (activate).

// record is what the topic's bucket keeps of a durable position.
type record struct {
	// Owner is the reader that holds the position, "" if none does
	// (its last reader stopped cleanly).
	Owner string `json:"owner"`
	// Handed is the highest stream sequence any reader of the position
	// may have handed to its application.
	Handed uint64 `json:"handed"`
	// Floor is the position's acknowledged sequence when Owner took it
	// over, and Deaths how many readers in a row took it over at that
	// floor from a reader that did not release it (it died, or lost its
	// turn): the value after the floor was handed to each of them, and
	// none finished it. A reader counts those as attempts of that value
	// (see Watcher.Receive): the server's own count of deliveries starts
	// again when a reader resets the position.
	Floor  uint64 `json:"floor,omitempty"`
	Deaths int    `json:"deaths,omitempty"`
	// Until is when Owner's lease ends (Unix nanoseconds): it hands
	// nothing out past it, less a margin, unless it renewed it; a reader
	// that takes the position over from an owner that did not release it
	// hands nothing out before it. So a reader that lost its turn without
	// knowing it (a consumer leader change forgot the pin) stops before
	// the next one starts, given clocks that agree within the margin.
	Until int64 `json:"until,omitempty"`
}

// takenOver makes r the record of a position that me takes over at floor,
// its lease until until: a reader before that did not release it died (or
// lost its turn), and counts as a death if the position still stands at
// the floor it took it over at.
func (r *record) takenOver(floor uint64, me string, until time.Time) {
	switch {
	case r.Owner != "" && r.Floor == floor:
		r.Deaths++ // the reader before died with the value after the floor unfinished
	case r.Floor != floor || r.Owner != "":
		r.Floor, r.Deaths = floor, 0
	}
	r.Owner, r.Until = me, until.UnixNano()
}

// How a reader became active (keeper.activate).
type activation int

const (
	// stillOwned: the record is this reader's, as it last wrote it.
	stillOwned activation = iota
	// resumed: this reader, fenced (its lease ran out with the record out
	// of reach, or a write's answer was lost), owns the record again,
	// which no other reader wrote since: none handed a value out. It
	// stays fenced until its feed has put aside what it held back
	// (unfence).
	resumed
	// tookOver: another reader may have handed values out since this one
	// last owned the record.
	tookOver
)

// activate makes this reader the owner of the position's record. It
// says how (see activation), and returns the highest sequence a reader
// may have handed out before: values up to it that come again count as
// redelivered if another reader owned the record. This reader may hand
// those out too, without a write.
func (k *keeper) activate(ctx context.Context, floor, delivered uint64) (handed uint64, how activation, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	ctx, cancel := k.boundLocked(ctx) // holding mu, as the keeper's lease check would
	defer cancel()
	for range 8 { // a reader writing meanwhile moves the revision: read again
		rec, rev, err := k.read(ctx)
		if err != nil {
			return 0, 0, err
		}
		if k.owned && rev == k.rev {
			if k.fenced.Load() {
				return rec.Handed, resumed, nil // its feed failed before it unfenced
			}
			return rec.Handed, stillOwned, nil // still this reader's
		}
		now := time.Now()
		switch {
		case k.me != "" && rec.Owner == k.me:
			how, err := k.resumeLocked(ctx, rec, rev, now)
			if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				continue
			}
			return rec.Handed, how, err
		case k.pending != "" && rec.Owner == k.pending:
			// This reader's takeover landed, its answer lost.
			k.me, k.pending = k.pending, ""
			k.ownLocked(k.pendingPrev, rec, rev, now)
			return rec.Handed, tookOver, nil
		}
		k.worstLocked(&rec, now, delivered)
		prev := rec
		// This ownership's name: a new one, and this reader's once
		// written (pending until then), so that a record naming it was
		// written by this reader alone.
		k.pending, k.pendingPrev = nuid.Next(), prev
		rec.takenOver(floor, k.pending, now.Add(k.takeover))
		rev, err = k.write(ctx, rec, rev)
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		k.me, k.pending = k.pending, ""
		k.ownLocked(prev, rec, rev, now)
		return rec.Handed, tookOver, nil
	}
	return 0, 0, errors.New("natsbridge: the durable position's record keeps changing")
}

// resumeLocked makes this reader the owner again of rec, at revision rev,
// which names it as its owner: every write checks the revision, and only
// this reader writes its name (see activate), so it wrote every revision
// since it took the record over, and no other reader handed a value out.
func (k *keeper) resumeLocked(ctx context.Context, rec record, rev uint64, now time.Time) (activation, error) {
	rec.Until = now.Add(k.takeover).UnixNano()
	rev, err := k.write(ctx, rec, rev)
	if err != nil {
		return 0, err
	}
	k.rev, k.owned, k.unpinDue, k.giveUp = rev, true, false, ""
	k.setUntilLocked(time.Unix(0, rec.Until), now)
	if k.fenced.Load() {
		return resumed, nil
	}
	return stillOwned, nil
}

// unfence lets a reader that resumed (see activate) hand out values
// again, if it still owns the record.
func (k *keeper) unfence() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.owned {
		return
	}
	k.fenced.Store(false)
	k.fenceChangedLocked()
	k.refused, k.resumeFrom = 0, 0
	k.reopenLocked()
	k.signal()
}

// ownLocked makes this reader the owner of the record rec, at revision
// rev, that it wrote over prev at now.
func (k *keeper) ownLocked(prev, rec record, rev uint64, now time.Time) {
	k.unpinDue, k.giveUp = false, "" // served under a pin of its own now
	k.rev, k.owned, k.before = rev, true, max(k.before, rec.Handed)
	k.floor, k.deaths = rec.Floor, rec.Deaths
	k.setUntilLocked(time.Unix(0, rec.Until), now)
	if held := time.Unix(0, prev.Until); prev.Owner != "" && prev.Until != 0 && held.After(now) {
		// The reader before may still hand out values until its lease
		// ends: hand out nothing before then.
		g := make(chan struct{})
		k.gateAt = held
		k.gate.Store(&g)
		if k.closed.Load() {
			k.openGate() // nothing is handed out any more: nothing waits for it
		}
	}
	if prev.Owner != "" {
		// The reader before died with values in its hands: one of them
		// may kill this reader too. Up to what that reader handed out,
		// hand values out one at a time, each acknowledged (and
		// confirmed) before the next, so that if one kills this reader
		// the position stands right before it, and the next reader
		// counts the death against it.
		k.acks.eagerTo(rec.Handed)
	}
	k.last, k.lastAt = rec.Handed, now
	// A new turn before the fence ends: a value handed out before, which
	// another reader may have had since, is never taken for this turn's.
	k.acks.newTurn(rec.Floor)
	k.fenced.Store(false)
	k.fenceChangedLocked()
	k.refused, k.resumeFrom = 0, 0 // the feed reads again from the floor
	k.reopenLocked()
	k.reserved.Advance(rec.Handed)
	k.soft.Store(rec.Handed)
	k.signal()
}

// write writes rec at revision rev (0: the record must not exist), and
// returns the new revision.
func (k *keeper) write(ctx context.Context, rec record, rev uint64) (uint64, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return 0, err
	}
	if rev == 0 {
		return k.kv.Create(ctx, k.key, b)
	}
	return k.kv.Update(ctx, k.key, b, rev)
}

// lease renews this reader's lease every third of the takeover time
// (with its reservation), fences the reader whose lease runs out (it
// could not renew it: the record is out of reach, or another reader
// took it over), and opens the gate once the lease of the reader before
// has ended.
func (k *keeper) lease(now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.gate.Load() != nil && !now.Before(k.gateAt) {
		k.openGate()
		k.signal()
	}
	if k.unpinDue {
		k.giveTurnUpLocked(false)
	}
	if !k.owned || k.closed.Load() {
		return
	}
	if now.Sub(k.renewed) >= k.takeover/3 {
		until := now.Add(k.takeover)
		ctx, cancel := k.callCtxLocked()
		rev, err := k.write(ctx, record{Owner: k.me, Handed: k.reserved.Load(), Floor: k.floor, Deaths: k.deaths, Until: until.UnixNano()}, k.rev)
		switch {
		case err == nil:
			k.rev = rev
			k.setUntilLocked(until, now)
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyNotFound):
			k.refusedLocked(ctx)
		}
		cancel()
		if !k.owned {
			return
		}
	}
	if !time.Now().Before(k.fenceAt()) { // now, after the write: it may have taken a while
		k.fenceLocked("lease not renewed in time (its record out of reach)")
		k.giveTurnUpLocked(true)
	}
}

// fenceAt is when this reader's lease makes it stop handing out: a margin
// before its end, for a clock that differs and for the moment the keeper
// takes to notice.
func (k *keeper) fenceAt() time.Time { return k.until.Add(-k.takeover / 4) }

// setUntilLocked records that this reader, owning the record, renewed its
// lease at now until until.
func (k *keeper) setUntilLocked(until, now time.Time) {
	k.until, k.renewed = until, now
	k.fenceBy.Store(k.fenceAt().UnixNano())
}

// callCtxLocked returns the ctx of a server call the keeper makes:
// bounded by resumeTimeout and, while this reader owns the record, by
// its fenceAt, so that a call to a server that does not answer (killed,
// or its bucket's leader lost) never holds the fence back past it. A
// reader whose keeper waited out a whole call there fenced itself 2 s
// late, after the lease it had written had ended and the next reader had
// started: both handed out values of one key.
func (k *keeper) callCtxLocked() (context.Context, context.CancelFunc) {
	bound := resumeTimeout
	if k.owned {
		bound = min(bound, max(time.Until(k.fenceAt()), time.Millisecond))
	}
	return context.WithTimeout(k.g.Stopping(), bound)
}

// boundLocked returns ctx bounded, while this reader owns the record, by
// its fenceAt (see callCtxLocked).
func (k *keeper) boundLocked(ctx context.Context) (context.Context, context.CancelFunc) {
	if !k.owned {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, k.fenceAt())
}

// refusedLocked follows a write of the record refused for its revision
// (or because the record is gone): another reader took the position over,
// and this one is fenced; unless the record is still this reader's (a
// write of its own landed and its answer was lost): it writes again on
// the revision it reads. A record out of reach leaves it as it is, to the
// lease.
func (k *keeper) refusedLocked(ctx context.Context) {
	rec, rev, err := k.read(ctx)
	switch {
	case err != nil:
		return
	case rev != 0 && rec.Owner == k.me:
		k.rev = rev
		return
	}
	if rec.Owner == lostOwner {
		k.fenceLocked("record deleted (by hand?)")
	} else {
		k.fenceLocked("taken over by another reader")
	}
	k.takenLocked()
	// Asked under a bound of its own: ctx ends at the fence point, which
	// a slow read of the record (its bucket made again) may have reached.
	pctx, cancel := context.WithTimeout(k.g.Stopping(), resumeTimeout)
	defer cancel()
	switch mine, err := k.ping(pctx); {
	case err != nil:
		// No answer: the next lease check gives the turn up, if the server
		// still pins this reader (see Topic.unpinIf). Left pinned, a
		// position whose record no other reader writes would wait for the
		// ack wait.
		k.turnGivenUpLocked()
	case mine:
		// The server still pins this reader: no reader took the position
		// over, the record was written otherwise (by hand, a restore).
		// Give the turn up, so that a reader, this one or another, takes
		// the record over.
		k.giveTurnUpLocked(true)
	}
}

// giveTurnUpLocked stops renewing the pin and asks the consumer to forget
// it, so that the next reader to ask, this one or another, is served,
// and takes the record over once it is in reach again; tried again at
// each lease check until the server answers. first says that this reader
// gives its turn up now, under the pin it holds: a retry gives up that
// pin, not one it got since.
func (k *keeper) giveTurnUpLocked(first bool) {
	if first {
		k.turnGivenUpLocked()
	}
	k.setPin("")
	if k.unpin == nil || k.giveUp == "" {
		k.unpinDue, k.giveUp = false, "" // no pin of this reader's to give up
		return
	}
	ctx, cancel := context.WithTimeout(k.g.Stopping(), resumeTimeout)
	defer cancel()
	err := k.unpin(ctx, k.giveUp)
	if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		k.log.warn("natsbridge: durable position not unpinned after this reader gave its turn up: retrying", errAttr(err))
		return
	}
	k.unpinDue, k.giveUp = false, ""
}

// turnGivenUpLocked notes that this reader gives its turn up under the
// pin it holds now: the keeper unpins that pin (see giveTurnUpLocked).
func (k *keeper) turnGivenUpLocked() {
	k.unpinDue, k.giveUp = true, ""
	if p := k.pin.Load(); p != nil {
		k.giveUp = *p
	}
}

// release writes that this reader, which stopped handing out values,
// no longer owns the position, with the highest sequence it handed out
// (not its reservation): the next reader counts as redelivered only
// values this one did hand out. It does nothing if another reader owns
// the position.
//
// A write of this reader's that the keeper's stop cut short may have
// landed, its answer lost: the record is a revision past the one this
// reader knows. If it still names this reader (only this reader writes
// its name), it releases it at the revision it reads.
func (k *keeper) release(ctx context.Context, handed uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.owned {
		return
	}
	k.owned = false
	rec, rev := record{Handed: max(handed, k.before)}, k.rev
	for range 3 {
		_, err := k.write(ctx, rec, rev)
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			if err != nil {
				k.log.warn("natsbridge: durable record not released: the next reader may count values this one handed out as redelivered", errAttr(err))
			}
			return
		}
		cur, curRev, err := k.read(ctx)
		if err != nil || cur.Owner != k.me {
			return // another reader's now, or out of reach
		}
		rev = curRev
	}
}
