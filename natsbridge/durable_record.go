package natsbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The record beside a durable position, in the topic's bucket: who owns
// the position, how far any reader may have handed values out, the lease
// of its owner, and the deaths of the readers before it (see keeper).

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

// read returns the record and its revision, a zero record and revision 0
// if there is none.
func (k *keeper) read(ctx context.Context) (record, uint64, error) {
	e, err := k.kv.Get(ctx, k.key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
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
	if g := k.gate.Load(); g != nil && !now.Before(k.gateAt) {
		close(*g)
		k.gate.Store(nil)
		k.signal()
	}
	if k.unpinDue {
		k.giveTurnUpLocked()
	}
	if !k.owned || k.closed {
		return
	}
	if now.Sub(k.renewed) >= k.takeover/3 {
		until := now.Add(k.takeover)
		ctx, cancel := context.WithTimeout(k.g.Stopping(), resumeTimeout)
		rev, err := k.write(ctx, record{Owner: k.me, Handed: k.reserved.Load(), Floor: k.floor, Deaths: k.deaths, Until: until.UnixNano()}, k.rev)
		cancel()
		switch {
		case err == nil:
			k.rev, k.until, k.renewed = rev, until, now
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyNotFound):
			k.fenceLocked("taken over by another reader")
			return
		}
	}
	if !now.Before(k.until.Add(-k.takeover / 4)) {
		k.fenceLocked("lease not renewed in time (its record out of reach)")
		k.unpinDue = true
		k.giveTurnUpLocked()
	}
}

// giveTurnUpLocked stops renewing the pin and asks the consumer to forget
// it, so that the next reader to ask, this one or another, is served,
// and takes the record over once it is in reach again; tried again at
// each lease check until the server answers.
func (k *keeper) giveTurnUpLocked() {
	k.setPin("")
	if k.unpin == nil {
		k.unpinDue = false
		return
	}
	ctx, cancel := context.WithTimeout(k.g.Stopping(), resumeTimeout)
	defer cancel()
	err := k.unpin(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		k.log.warn("natsbridge: durable position not unpinned after its lease ran out: retrying", errAttr(err))
		return
	}
	k.unpinDue = false
}

// release writes that this reader, which stopped handing out values,
// no longer owns the position, with the highest sequence it handed out
// (not its reservation): the next reader counts as redelivered only
// values this one did hand out. It does nothing if another reader owns
// the position.
func (k *keeper) release(ctx context.Context, handed uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.owned {
		return
	}
	k.owned = false
	if _, err := k.write(ctx, record{Handed: max(handed, k.before)}, k.rev); err != nil && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		k.log.warn("natsbridge: durable record not released: the next reader may count values this one handed out as redelivered", errAttr(err))
	}
}
