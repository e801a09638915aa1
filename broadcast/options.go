package broadcast

import "fmt"

// Default sizes, used where Options leaves a length at zero.
const (
	// DefaultQueueLength is the capacity of each watcher's queue (the value
	// of apimachinery's watch.DefaultChanSize).
	DefaultQueueLength = 100
	// DefaultIncomingQueueLength is the capacity of the queue between
	// publishers and the distributor, as in apimachinery's watch.Broadcaster.
	DefaultIncomingQueueLength = 25
)

// Options configures a Broadcaster. The zero value is ready to use: every
// field documents its default.
type Options struct {
	// QueueLength is the capacity of each watcher's queue. Zero means
	// DefaultQueueLength. Negative values panic in New.
	QueueLength int
	// IncomingQueueLength is how many published values may wait for the
	// distributor. When it is full, Publish waits and TryPublish refuses.
	// Zero means DefaultIncomingQueueLength. Negative values panic in New.
	IncomingQueueLength int
	// Full decides what happens when a watcher's queue is full. The zero
	// value is Block. Watch and WatchWithPrefix use it; WatchWith chooses
	// per watcher.
	Full FullPolicy
}

// WatchOptions configures one watcher created by Broadcaster.WatchWith.
// The zero value gives a Block watcher with the broadcaster's QueueLength.
type WatchOptions struct {
	// QueueLength is the capacity of this watcher's queue. Zero means the
	// broadcaster's Options.QueueLength. Negative values panic.
	QueueLength int
	// Full is this watcher's policy when its queue is full, used as given:
	// the zero value is Block, whatever the broadcaster's Options.Full.
	Full FullPolicy
}

// FullPolicy says what a Broadcaster does with a value for a watcher whose
// queue is full. Each watcher has its own policy; a full watcher never makes
// another watcher lose a value.
type FullPolicy int

const (
	// Block waits until the watcher makes room or is stopped. Nothing is
	// lost, but one slow Block watcher holds back every other watcher and,
	// once the incoming queue fills, every publisher. This is the zero value
	// (apimachinery's WaitIfChannelFull).
	Block FullPolicy = iota
	// DropNewest skips the new value for that watcher only, and counts it
	// (apimachinery's DropIfChannelFull, which does not count).
	DropNewest
	// DropOldest discards the oldest value still queued for that watcher to
	// make room for the new one, and counts it: a slow watcher always holds
	// the freshest values.
	DropOldest
)

// String returns the policy's name, as in its constant.
func (p FullPolicy) String() string {
	switch p {
	case Block:
		return "Block"
	case DropNewest:
		return "DropNewest"
	case DropOldest:
		return "DropOldest"
	}
	return fmt.Sprintf("FullPolicy(%d)", int(p))
}

func (p FullPolicy) valid() bool { return p >= Block && p <= DropOldest }
