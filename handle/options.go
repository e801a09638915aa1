package handle

import (
	"fmt"
	"log/slog"
	"time"
)

// Defaults, used where Options leaves a field at zero.
const (
	// DefaultWorkers is how many handlers run at once.
	DefaultWorkers = 8
	// DefaultMaxAttempts is how many times a value is handled before it
	// is dead-lettered.
	DefaultMaxAttempts = 5
	// DefaultRetryMin and DefaultRetryMax bound the wait before a retry:
	// the first waits about RetryMin, each next one twice as long, up to
	// RetryMax.
	DefaultRetryMin = 100 * time.Millisecond
	DefaultRetryMax = 30 * time.Second
	// DefaultQueueLength is how many values a Pool holds at once: in
	// flight, waiting behind their key, or waiting out a retry.
	DefaultQueueLength = 1024
	// DefaultWindow is how far reading may run ahead of the oldest value
	// without a fate (see Options.Window).
	DefaultWindow = 16384
	// DefaultDeadLetterQueue is the length of the queue of Pool.DeadLetters.
	DefaultDeadLetterQueue = 1024
	// DefaultSlowKey is how long a key may hold up the values behind it
	// before the Pool logs it.
	DefaultSlowKey = 30 * time.Second
)

// Options configures a Pool. The zero value is ready to use; each field
// documents its default.
type Options struct {
	// Workers is how many handlers run at once. Zero means
	// DefaultWorkers.
	Workers int
	// MaxAttempts is how many times a value is handled, across its
	// source's deliveries, before it is dead-lettered. Zero means
	// DefaultMaxAttempts; 1 means no retry. Across deliveries, a source
	// counts what it knows (a durable natsbridge watcher: one attempt for
	// each reader that died with the value first unfinished, before it
	// moved its position on): retries a process made before it died may
	// count as one, so a value can be handled more than MaxAttempts times
	// in all, at most MaxAttempts in each process.
	MaxAttempts int
	// RetryMin and RetryMax bound the wait before a failed value is
	// handled again: about RetryMin before the first retry, twice as long
	// before each next one, never more than RetryMax, each with jitter (a
	// wait drawn between half and all of it). Zero means DefaultRetryMin,
	// DefaultRetryMax. While a value waits, the values after it with its
	// key wait too; other keys go on.
	RetryMin, RetryMax time.Duration
	// QueueLength is how many values the Pool holds at once (in flight,
	// waiting behind their key, waiting out a retry): when it is full the
	// Pool stops reading its source. Zero means DefaultQueueLength.
	QueueLength int
	// Window bounds how far reading runs ahead of the oldest value that
	// has no fate yet: with a value of one key held (a slow handler, a
	// retry), the values of other keys go on and finish, but a durable
	// source acknowledges none past the held one, and on a crash sends all
	// of them again. Once Window values were received from that oldest one
	// on, the Pool stops reading (Stats().Paused) until it has its fate.
	// Zero means DefaultWindow.
	Window int
	// DeadLetterQueue is the length of the queue of Pool.DeadLetters. When
	// it is full, the worker that gives a value up waits for room (the
	// value's key waits with it): read the dead letters. Zero means
	// DefaultDeadLetterQueue.
	DeadLetterQueue int
	// SlowKey is how long a key may hold up the values behind it (its
	// oldest value in a handler, or waiting out retries) before the Pool
	// logs it, once per SlowKey per key at most. Zero means
	// DefaultSlowKey.
	SlowKey time.Duration
	// Logger receives the Pool's warnings (panics, dead letters, slow
	// keys), in bursts: the first of a kind at once, the others counted
	// into the next line. Nil means slog.Default().
	Logger *slog.Logger
}

// resolved returns o with its defaults filled in. It panics, naming the
// field, for a value no Pool can work with.
func (o Options) resolved() Options {
	for _, f := range []struct {
		name string
		n    int
	}{{"Workers", o.Workers}, {"MaxAttempts", o.MaxAttempts}, {"QueueLength", o.QueueLength}, {"Window", o.Window}, {"DeadLetterQueue", o.DeadLetterQueue}} {
		if f.n < 0 {
			panic(fmt.Sprintf("handle: negative Options.%s", f.name))
		}
	}
	if o.RetryMin < 0 || o.RetryMax < 0 || o.SlowKey < 0 {
		panic("handle: negative duration in Options")
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Workers, DefaultWorkers)
	def(&o.MaxAttempts, DefaultMaxAttempts)
	def(&o.QueueLength, DefaultQueueLength)
	def(&o.Window, DefaultWindow)
	def(&o.DeadLetterQueue, DefaultDeadLetterQueue)
	if o.RetryMin == 0 {
		o.RetryMin = DefaultRetryMin
	}
	if o.RetryMax == 0 {
		o.RetryMax = max(DefaultRetryMax, o.RetryMin)
	}
	if o.RetryMax < o.RetryMin {
		panic("handle: Options.RetryMax below RetryMin")
	}
	if o.SlowKey == 0 {
		o.SlowKey = DefaultSlowKey
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Stats is a snapshot of a Pool's counters. In every snapshot,
//
//	Received = Handled + DeadLettered + InFlight + Waiting + Backoff + Abandoned
//
// Retries counts the attempts after a failure, apart.
type Stats[K comparable] struct {
	// Received counts the values read from the source, poison messages
	// included.
	Received uint64
	// Handled counts the values whose handler returned nil.
	Handled uint64
	// DeadLettered counts the values given up on: failed MaxAttempts
	// times, failed permanently, undecodable (Poisoned counts those), or
	// their key function panicked.
	DeadLettered uint64
	// Poisoned counts the values that could not be decoded.
	Poisoned uint64
	// Mixed counts the values, from a PartitionedSource, that joined a key
	// whose value before them, still in the Pool, came from another
	// partition: the key function does not refine the source's partition
	// key (each is logged, in bursts). They are handled, in the order the
	// Pool received them; but such a key's values have no order across
	// partitions, and two members of a group may handle them at once.
	Mixed uint64
	// InFlight is the number of values in a handler (or being
	// dead-lettered) now.
	InFlight int
	// Waiting is the number of values waiting for a worker, or for the
	// values before them with their key.
	Waiting int
	// Backoff is the number of values waiting out the wait before a
	// retry.
	Backoff int
	// Abandoned counts the values Shutdown left without a fate: never
	// handled, or whose handler had not returned by its deadline; and
	// those Voided counts. A durable source hands them out again.
	Abandoned uint64
	// Voided counts the values of a TurnSource whose reader no longer
	// held them when they were due to be handled, or to be dead-lettered
	// after their last attempt (another reader took its position over):
	// not handled nor dead-lettered here, counted in Abandoned too. One
	// given up so while the Pool stops is counted in Abandoned only.
	Voided uint64
	// Retries counts the attempts after a failure, once each has ended
	// (a retry given up before its handler began is none); Panics the
	// handlers that panicked or called runtime.Goexit (each counted as a
	// failure too).
	Retries, Panics uint64
	// Keys is the number of keys with values in the Pool.
	Keys int
	// Paused reports whether reading is paused: the Pool holds
	// QueueLength values, or the Window behind the oldest value without a
	// fate is full. Pauses counts the times it paused. A Pool that pauses
	// often, with one key Blocked, has a key past one worker's capacity.
	Paused bool
	Pauses uint64
	// Blocked is the key that has held up its values the longest, if any
	// does: its oldest value has begun and has no fate yet (in a handler,
	// being dead-lettered, waiting out a retry or, after one, for a
	// worker).
	Blocked *Blocked[K]
}

// Blocked describes the key that has held up its values the longest.
type Blocked[K comparable] struct {
	Key K
	// Since is when its oldest value's first attempt began (to within
	// 100ms); For how long ago that was.
	Since time.Time
	For   time.Duration
	// Attempts is how many times that value was handled so far; Behind how
	// many values of the key wait behind it.
	Attempts int
	Behind   int
}
