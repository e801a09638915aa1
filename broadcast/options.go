package broadcast

import (
	"fmt"
	"strconv"
)

// Default and largest sizes of the queues.
const (
	// DefaultQueueLength is the capacity of each watcher's queue.
	DefaultQueueLength = 100
	// DefaultIncomingQueueLength is the capacity of the queue between
	// publishers and the distributor.
	DefaultIncomingQueueLength = 25
	// MaxQueueLength is the largest queue length New and WatchWith accept,
	// for a watcher's queue and for the incoming queue. A queue watcher's
	// queue takes memory as it fills, not up front; a channel watcher's
	// channel is made with the watcher's full length.
	MaxQueueLength = 1 << 24
)

// Options configures a Broadcaster. It is passed by value; the zero value
// is ready to use, and each field documents its default.
type Options struct {
	// QueueLength is the capacity of each watcher's queue. Zero means
	// DefaultQueueLength. New panics if it is negative or above
	// MaxQueueLength.
	QueueLength int
	// IncomingQueueLength is how many published values may wait for the
	// distributor. When it is full, Publish waits and TryPublish refuses.
	// Zero means DefaultIncomingQueueLength. New panics if it is negative
	// or above MaxQueueLength.
	IncomingQueueLength int
	// Full decides what happens when a watcher's queue is full, for the
	// watchers of Watch and for those of WatchWith that leave their own
	// Full at zero. The zero value means Block.
	Full FullPolicy
}

// WatchOptions configures one watcher created by Broadcaster.WatchWith. The
// zero value gives the watcher Watch gives: a queue watcher configured as
// the broadcaster's Options say.
type WatchOptions struct {
	// QueueLength is the capacity of this watcher's queue. Zero means the
	// broadcaster's. WatchWith panics if it is negative or above
	// MaxQueueLength.
	QueueLength int
	// Full is this watcher's policy when its queue is full. The zero value
	// means the broadcaster's Options.Full; name a policy to choose one.
	Full FullPolicy
	// Read is how the watcher is read, for good. The zero value is
	// ReadQueue. WatchWith panics if it is not a ReadMode constant.
	Read ReadMode
}

// ReadMode is how a watcher is read, chosen when it is made: a queue
// watcher is read with Watcher.All, Watcher.Next and Watcher.NextBatch, a
// channel watcher with Watcher.Events (and All, Next and NextBatch, which
// read its channel). No read call ever panics because of another: Events
// on a queue watcher returns a closed channel.
type ReadMode int

const (
	// ReadQueue makes a queue watcher, what Watch makes: read it with All
	// (the fastest way to read, a batch at a time), NextBatch or Next. Its
	// Events returns a closed channel: a watcher meant for select
	// statements is made with ReadChannel. This is the default.
	ReadQueue ReadMode = iota
	// ReadChannel makes a channel watcher: the distributor sends its
	// values into a channel, Events, for select statements; All, Next and
	// NextBatch receive from it. The channel is made at once with the watcher's
	// full queue length.
	ReadChannel
)

// String returns the mode's name, as in its constant.
func (m ReadMode) String() string {
	switch m {
	case ReadQueue:
		return "ReadQueue"
	case ReadChannel:
		return "ReadChannel"
	}
	return "ReadMode(" + strconv.Itoa(int(m)) + ")"
}

// FullPolicy says what a Broadcaster does with a value for a watcher whose
// queue is full. Each watcher has its own policy; a full watcher never makes
// another watcher lose a value.
//
// The zero FullPolicy names no policy: it means "the default", which is
// Block in Options and the broadcaster's policy in WatchOptions.
type FullPolicy int

const (
	// Block waits until the watcher makes room or is stopped. Nothing is
	// lost, but one slow Block watcher holds back every other watcher and,
	// once the incoming queue fills, every publisher. This is the default.
	Block FullPolicy = iota + 1
	// DropNewest skips the new value for that watcher only, and counts it.
	DropNewest
	// DropOldest discards the oldest value still queued for that watcher to
	// make room for the new one, and counts it: a slow watcher always holds
	// the freshest values.
	DropOldest
)

// String returns the policy's name, as in its constant, and "default" for
// the zero value.
func (p FullPolicy) String() string {
	switch p {
	case 0:
		return "default"
	case Block:
		return "Block"
	case DropNewest:
		return "DropNewest"
	case DropOldest:
		return "DropOldest"
	}
	return "FullPolicy(" + strconv.Itoa(int(p)) + ")"
}

// resolve returns p, or def when p is the zero value. It panics, naming
// field, when p is not a FullPolicy constant.
func (p FullPolicy) resolve(def FullPolicy, field string) FullPolicy {
	switch {
	case p == 0:
		return def
	case p >= Block && p <= DropOldest:
		return p
	}
	panic("broadcast: invalid " + field + " " + p.String())
}

// checkLength returns n, or def when n is zero. It panics, naming field,
// when n is negative or above MaxQueueLength.
func checkLength(n, def int, field string) int {
	switch {
	case n < 0:
		panic("broadcast: negative " + field)
	case n > MaxQueueLength:
		panic(fmt.Sprintf("broadcast: %s %d is above MaxQueueLength (%d)", field, n, MaxQueueLength))
	case n == 0:
		return def
	}
	return n
}
