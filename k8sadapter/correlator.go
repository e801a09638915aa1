package k8sadapter

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/heraldgo/herald/correlate"
	"github.com/heraldgo/herald/internal/correlation"
	"github.com/heraldgo/herald/k8sadapter/internal/kube"
)

// EventCorrelator is client-go's record.EventCorrelator on herald's
// correlation engine (the one under package correlate): for the same
// events and clock it returns the same events, the same patches byte for
// byte and the same skips, much faster (it hashes each event's fields once
// and builds the patch without a JSON diff). It is safe for concurrent use;
// its zero value is not usable: create one with NewEventCorrelator or
// NewEventCorrelatorWithOptions.
//
// Differences from client-go, on purpose:
//   - Keys are structs, so fields never run into each other ("ab"+"c" and
//     "a"+"bc" are different keys; client-go concatenates them).
//   - When a group of similar events is full and one member must go,
//     client-go drops a random one; herald drops the least recently seen.
//   - A KeyFunc, MessageFunc or SpamKeyFunc that panics is reported as an
//     error, and the event changes nothing, instead of crashing.
//   - So that every function of the user's runs before anything changes,
//     a SpamKeyFunc is given the event before it is counted: the event
//     as given, or a combined event before it is named. client-go gives
//     it the copy it returns, with the name, count, first timestamp and
//     resource version of earlier occurrences. A spam key made of other
//     fields (client-go's own is made of the source, the object and the
//     type) is the same.
type EventCorrelator struct {
	msg    record.EventAggregatorMessageFunc
	ownMsg bool // msg is the user's MessageFunc, not client-go's default
	// userCode: a KeyFunc, SpamKeyFunc or MessageFunc of the user's
	// reads the events correlated, and may write them.
	userCode bool
	// stamp, set by a sink, moves the time of a combined event as the
	// recorder moves the time of each event it builds (Pipeline.Stamp),
	// so that its name, generated from that time, is no other event's.
	stamp func(time.Time) time.Time

	// mu guards engine, in, standIn, combo and hasher: the items the
	// engine is handed are reused from call to call.
	mu      sync.Mutex
	engine  *correlation.Correlator[*item, key, member, last]
	in      item      // the event being correlated
	standIn item      // its group's combined event, when there is one
	combo   *combined // the result that holds standIn's event, built by combine
	hasher  fieldHasher
}

// item is what the engine sees: an event and the hashes of its fields,
// computed once and shared by every key of the event.
type item struct {
	e *v1.Event
	f fieldHashes
	// The strings a user's KeyFunc and SpamKeyFunc returned for e, kept by
	// the hash functions for the match and key functions: a user's
	// function runs once per event.
	group, member, spam string
	// With a KeyFunc, which may write e: e's event key as it was before
	// the function ran, as client-go takes it.
	key key
	// unnamed: e's name is to be generated when the engine keeps it (see
	// keep): a combined event's, and the sink's rebuilt occurrences'.
	unnamed bool
}

// last is what the engine remembers of an event: what a repeat patches.
type last struct{ name, rv string }

// EventCorrelateResult is what EventCorrelate decided for one event, as in
// client-go.
type EventCorrelateResult struct {
	// Event is what to record: a copy of the input with its count, name
	// and timestamps set from earlier occurrences, or the combined event
	// standing in for a group of similar ones.
	Event *v1.Event
	// Patch is the strategic-merge patch to send when Event.Count > 1.
	Patch []byte
	// Skip reports whether the spam filter refused the event.
	Skip bool
}

// result is an EventCorrelateResult and its event, allocated together.
type result struct {
	r  EventCorrelateResult
	ev v1.Event
}

// patched is a result with room for its patch when the message is up to
// 175 bytes, all in one allocation: 640 bytes of result, 248 of room and
// the allocator's 8-byte header make 896, one of its size classes.
type patched struct {
	result
	buf [248]byte
}

// combined is the result of a combined event, with room for its message
// and its patch, all in one allocation: 640 bytes of result, 8 of msg,
// 240 of room and the allocator's header make 896, one of its size
// classes. When the message of the event that filled the group is up to
// 135 bytes that encoding/json writes as they are, the combined message
// lies in the room where its patch will carry it (see combinedMessage and
// patch), after room for the patch's head: the patch and the event share
// those bytes, which nothing writes once the result is handed out.
type combined struct {
	result
	msg int // bytes of buf, from msgAt, that Event.Message takes; 0: it has its own
	buf [240]byte
}

// msgAt is where a combined message starts in combined.buf: after the
// longest head of a patch (patchHead with a quote), 71 bytes.
const msgAt = 71

// combinedMessage returns client-go's combined message for message
// (record.EventAggregatorByReasonMessageFunc's): in p's room when it fits
// there with its patch, so that a combined event costs no allocation but
// its result's (BenchmarkEventCorrelateRealistic, path=aggregate); or
// else in a string of its own. p is then owned by the correlator, which
// hands it out only once built: nothing else refers to the message until
// then, and nothing writes its bytes after.
func (p *combined) combinedMessage(message string) string {
	n := len(correlate.CombinedPrefix) + len(message)
	if msgAt+n+len(`"}`) > len(p.buf) || !jsonPlainString(message) {
		p.msg = 0
		return correlate.CombinedPrefix + message
	}
	b := append(p.buf[msgAt:msgAt], correlate.CombinedPrefix...)
	b = append(b, message...)
	p.msg = len(b)
	return unsafe.String(&p.buf[msgAt], n)
}

// patch returns the patch of p's event, e: around its message when
// combinedMessage put it in p's room, or else appended after nothing.
func (p *combined) patch(e *v1.Event) []byte {
	if p.msg == 0 {
		return appendPatch(p.buf[:0], e)
	}
	var head [msgAt]byte
	h := append(appendPatchHead(head[:0], e), '"')
	if len(h) > msgAt || e.Message == "" { // a year past 9999 in lastTimestamp
		return appendPatch(nil, e)
	}
	start, end := msgAt-len(h), msgAt+p.msg
	copy(p.buf[start:], h)
	end += copy(p.buf[end:], `"}`)
	return p.buf[start:end:end]
}

// seed records a first occurrence as client-go does: with the event's own
// count and first timestamp. client-go keeps the count as a uint, so a
// negative count is a large one there; uint32 keeps the same value modulo
// 2^32, which is all that reaches the int32 Count of the next repeat.
func seed(it *item, _ time.Time) (int, time.Time) {
	return int(uint32(it.e.Count)), it.e.FirstTimestamp.Time
}

// keep is what a new event leaves in the cache: its name and resource
// version, which a repeat patches. A combined event gets its name here,
// as client-go names it: only a new one needs it, a repeat takes the name
// of the first.
func (c *EventCorrelator) keep(it *item) last {
	if it.unnamed {
		generateName(it.e)
		it.unnamed = false
	}
	return last{name: it.e.Name, rv: it.e.ResourceVersion}
}

// generateName gives e the name the recorder and client-go's aggregator
// generate from its object and first timestamp. client-go does not check
// a combined event's name.
func generateName(e *v1.Event) {
	e.Name = kube.GeneratedName(e.InvolvedObject.Name, e.FirstTimestamp.UnixNano())
}

// combine builds the event that stands in for a group of similar events,
// field for field as client-go's aggregator builds it but for the name,
// which keep sets. It builds it in the result that correlate returns (with
// room for a patch: a combined event is new once per group and then
// patched), so that the event is not copied again.
func (c *EventCorrelator) combine(it *item, now time.Time) *item {
	if c.stamp != nil {
		now = c.stamp(now)
	}
	e, t := it.e, metav1.NewTime(now)
	arg := e
	if it.unnamed && c.ownMsg {
		// A rebuilt occurrence lives in the sink's scratch, unnamed, and
		// is overwritten by the next: the user's function gets its own
		// copy, named, as client-go's gets the recorder's event.
		cp := *e
		generateName(&cp)
		arg = &cp
	}
	p := c.combo
	if p == nil {
		p = new(combined) // the last one was handed out
		c.combo = p
	} else {
		p.ev = v1.Event{} // kept, as it was skipped: keep named it
	}
	var msg string
	if c.userCode {
		// A function of the user's may keep the message, or a key made
		// from it: it gets a string of its own.
		p.msg = 0
		msg = c.msg(arg)
	} else {
		msg = p.combinedMessage(e.Message)
	}
	// Field by field into zeroed memory: a composite literal would be
	// built aside and copied in whole, every pointer of it through the
	// garbage collector's write barrier.
	ev := &p.ev
	ev.Namespace = e.Namespace
	ev.Count = 1
	ev.FirstTimestamp, ev.LastTimestamp = t, t
	ev.InvolvedObject = e.InvolvedObject
	ev.Message = msg
	ev.Type, ev.Reason = e.Type, e.Reason
	ev.Source = e.Source
	// The same fields as the trigger's but for the message and the
	// reporting fields, which the combined event leaves empty.
	f := it.f
	f.message, f.reportingController, f.reportingInstance = hashString(msg), emptyHash, emptyHash
	c.standIn.e, c.standIn.f, c.standIn.unnamed = ev, f, true
	return &c.standIn
}

// errNilEvent is client-go's error text for a nil event.
var errNilEvent = errors.New("event is nil")

// EventCorrelate decides what to record for e: e itself (count 1, created),
// e as a repeat of an earlier event (count n, patched), the combined event
// of e's group, or nothing (Skip: the spam filter refused it; it is still
// counted). It never modifies e, though the CorrelatorOptions functions are
// given e, as in client-go: what they write to it stays. (A broadcaster's
// sink gives its correlator a copy of its own, as client-go's does, when
// there are such functions.) A nil e is an error, as in client-go; so is
// a panic in a CorrelatorOptions function, in which case e is returned to be
// recorded as it is, and the correlator is as if it had not seen e.
//
// It allocates the result with its copy of the event, and on a repeat the
// patch (see BenchmarkEventCorrelate).
func (c *EventCorrelator) EventCorrelate(e *v1.Event) (*EventCorrelateResult, error) {
	r, _, err := c.correlate(e)
	if r == &skipped {
		return &EventCorrelateResult{Skip: true}, err // the caller's own
	}
	return r, err
}

// skipped is the result correlate returns for every skipped event: the
// sink reads it only, and EventCorrelate hands out a copy.
var skipped = EventCorrelateResult{Skip: true}

// correlate is EventCorrelate, also reporting whether the event was
// replaced by its group's combined event.
func (c *EventCorrelator) correlate(e *v1.Event) (*EventCorrelateResult, bool, error) {
	if e == nil {
		return nil, false, errNilEvent
	}
	d, err := c.decide(e, false)
	return d.build(e), d.combined, err
}

// decision is what the correlator decided for an event, before its result
// is built: the sink builds the result of a patch only if it writes it
// (see handle).
type decision struct {
	prev     correlation.Observation[last] // zero Count: a new event
	count    int
	combo    *combined // the combined event's result, built by combine
	combined bool
	skip     bool
}

// optionName names the field of record.CorrelatorOptions whose function
// panicked in f. The event key's own functions are herald's and do not
// panic: with a negative MaxEvents it runs the KeyFunc.
func optionName(f correlation.Func) string {
	switch f {
	case correlation.FuncClock:
		return "Clock"
	case correlation.FuncGroup, correlation.FuncMember, correlation.FuncKey:
		return "KeyFunc"
	case correlation.FuncCombine:
		return "MessageFunc"
	case correlation.FuncSpam:
		return "SpamKeyFunc"
	}
	return "the event key"
}

// decide correlates e. If unnamed, e is one of the sink's rebuilt
// occurrences whose name is not set yet: it is named when the correlator
// keeps it (a repeat takes the name of the first), or when it is to be
// recorded as it is. The error is a panic in a CorrelatorOptions
// function: the decision is then to record e as it is.
func (c *EventCorrelator) decide(e *v1.Event, unnamed bool) (decision, error) {
	c.mu.Lock()
	r, p := c.engine.Correlate(c.hold(e, unnamed))
	if p != nil {
		c.mu.Unlock()
		if unnamed { // c.in is not ours once unlocked
			generateName(e)
		}
		return decision{}, fmt.Errorf("k8sadapter: correlate event %s/%s: %w in %s: %v", e.Namespace, e.Name, correlate.ErrPanic, optionName(p.Func), p.Value)
	}
	d := decision{prev: r.Previous, count: r.Count, combined: r.Combined, skip: r.Skip}
	if d.combined && !d.skip {
		// The combined event is handed out in the result: it is the
		// caller's now. Otherwise combine reuses it.
		d.combo, c.combo = c.combo, nil
		c.standIn.e = nil // do not keep the caller's event alive
	}
	if d.prev.Count > 0 && int32(d.count) == 0 && !d.combined {
		// The int32 count wrapped to 0 (an event that arrived with a
		// negative count): client-go remembers that 0, so its next
		// occurrence counts as new, even when the spam filter refuses
		// this one (it observes before it filters). Remember it the
		// same way.
		c.stored(&c.in, correlation.Observation[last]{First: d.prev.First, Last: d.prev.Last})
	}
	c.mu.Unlock()
	return d, nil
}

// resultCount is the count of the event build returns for e, not
// combined.
func (d *decision) resultCount(e *v1.Event) int32 {
	if d.prev.Count > 0 {
		return int32(d.count)
	}
	return e.Count
}

// build returns the result of d for e: the shared skipped result, the
// combined event, or a copy of e (the one copy) with what d counted.
func (d *decision) build(e *v1.Event) *EventCorrelateResult {
	if d.skip {
		return &skipped
	}
	var out *result
	var buf []byte
	switch {
	case d.combined:
		out = &d.combo.result // combine built the event there
	case d.prev.Count > 0:
		p := new(patched)
		out, buf = &p.result, p.buf[:0]
		out.ev = *e
	default:
		out = new(result)
		out.ev = *e
	}
	out.r.Event = &out.ev
	if prev := &d.prev; prev.Count > 0 {
		out.ev.Name = prev.Last.name
		out.ev.ResourceVersion = prev.Last.rv
		out.ev.FirstTimestamp = metav1.NewTime(prev.First)
		out.ev.Count = int32(d.count)
		if d.combined {
			out.r.Patch = d.combo.patch(&out.ev)
		} else {
			out.r.Patch = appendPatch(buf, &out.ev)
		}
	}
	return &out.r
}

// UpdateState feeds back what the server stored for an event, so that the
// next repeat patches that event (its name, resource version, count and
// first timestamp). It is keyed as client-go keys it, by the full event.
func (c *EventCorrelator) UpdateState(e *v1.Event) {
	if e == nil {
		return
	}
	obs := correlation.Observation[last]{
		Count: int(uint32(e.Count)), // as seed: client-go keeps a uint
		First: e.FirstTimestamp.Time,
		Last:  last{name: e.Name, rv: e.ResourceVersion},
	}
	c.mu.Lock()
	c.stored(c.hold(e, false), obs)
	c.mu.Unlock()
}

// hold makes c.in the item of e and returns it. Field by field, not as a
// composite literal, which would be copied in whole through the garbage
// collector's write barrier: the strings a user's key functions left in
// it are not cleared, as they are set again before they are read.
func (c *EventCorrelator) hold(e *v1.Event, unnamed bool) *item {
	c.in.e, c.in.f, c.in.unnamed = e, c.hasher.hash(e), unnamed
	return &c.in
}

// stored is the engine's Stored under the event key of it.
func (c *EventCorrelator) stored(it *item, obs correlation.Observation[last]) {
	c.engine.Stored(eventHash(&it.f),
		func(k *key) bool { return isEventKey(it.e, k) },
		func() key { return eventKey(it.e) },
		obs)
}
