// Package broadcast fans typed values out to many watchers, in order.
//
// A Broadcaster[T] owns one goroutine, the distributor. Publishers queue
// values; the distributor hands each value to every registered Watcher.
// Nothing about T is assumed: orders, jobs, alerts, log lines,
// except Go's limit on a channel's element, which Watcher.Events is: T
// must be smaller than 64 KiB; send a pointer to anything larger.
//
// # Usage
//
//	b := broadcast.New[Order](broadcast.Options{})
//	defer b.Shutdown(context.Background())
//
//	w, _ := b.Watch()
//	go func() {
//		for o := range w.All() { // or w.Next(ctx); or <-w.Events() as the first read
//			ship(o)
//		}
//	}()
//	_ = b.Publish(ctx, Order{ID: 1}) // or b.TryPublish, which never blocks
//
// # Delivery and ordering
//
// Every watcher receives values in the order they were queued. A watcher
// receives exactly the values queued after its Watch call: none queued
// before, every one queued after (unless its FullPolicy drops some, or it is
// stopped). WatchWithPrefix puts given values in front of those.
//
// Each watcher has a queue (Options.QueueLength, 100 by default) and a
// FullPolicy for when the queue is full: Block waits, losing nothing;
// DropNewest skips the new value for that watcher; DropOldest discards that
// watcher's oldest queued value. A full watcher never makes another one
// lose a value (until a Shutdown gives up waiting: see Shutdown). Every
// loss is counted, per watcher in Watcher.Dropped and
// in total in Broadcaster.Stats.
//
// Publish waits while the incoming queue (Options.IncomingQueueLength, 25 by
// default) is full; TryPublish refuses instead, and counts the refusal.
//
// # Markers and Flush
//
// Registration travels the incoming queue as a marker at a queue position:
// when the distributor reaches that position, every value queued before it
// has been placed in (or dropped from) every watcher's queue and none
// queued after it, and the distributor adds the watcher there. No watcher
// ever sees a marker. That is what makes registration exact, while Watch
// itself never waits.
//
// Broadcaster.Flush queues a function marker: a function bound to a queue
// position, run by the distributor when it reaches that position, never
// seen by watchers. Flush returns once everything published before the
// call is in the queue of every watcher registered before it.
// Watcher.Delivered then says how much a reader has to take to have seen
// all of it.
//
// # Reading
//
// A watcher's first read chooses its read mode, for good.
//
// A queue watcher is one first read by Watcher.All or Watcher.Next. All is
// an iterator that takes all queued values in one step: it is the fastest
// way to read, with one lock and at most one wake-up per batch rather than
// per value (see bench_test.go). Next takes one value with a context. The
// two can be mixed: they share one queue, and a value an All loop took but
// did not yield goes back to its place in it. Inside an All loop's body,
// though, the values the loop took are its own until it yields them: a Next
// or a nested All loop on the same watcher there takes only values queued
// after them, or waits for one.
//
// A channel watcher is one first read by Watcher.Events, for select
// statements: the distributor sends its values straight into a channel of
// the watcher's queue length (plus room for a prefix, see
// Broadcaster.WatchWithPrefix). Next and All on a channel watcher read that
// channel, and mix with receives from it.
//
// Events on a queue watcher panics: a watcher meant for select statements
// calls Events before any other read.
//
// # Concurrency
//
// All methods are safe for concurrent use. No method runs user code, and no
// goroutine is started per value or per publish: the distributor is the only
// goroutine, and it batches values so that each watcher is woken once per
// batch rather than once per value.
//
// # Shutdown
//
// Broadcaster.Shutdown stops new publishing: Watch, Publish and TryPublish
// return ErrClosed from the moment it begins, and Broadcaster.Done is
// closed. It delivers everything queued before it, then closes every
// watcher (its queued values stay readable) and waits for the distributor
// to exit. The wait is bounded by its context: once the context ends, no
// Block watcher is waited for any more. The distributor places what is
// left and exits; a Block watcher whose queue is full when a value comes
// to it loses that value, counted in Stats.DroppedShutdown and in its
// Dropped. That is the watcher that did not make room, and also any other
// whose queue the values held back behind it fill faster than its reader
// empties it: after the context ends, no watcher can be told from one
// that will never read. Shutdown then returns ctx.Err() once the
// distributor has exited.
//
// Shutdown returns nil only if no value was abandoned so: once values were,
// every other Shutdown call, concurrent or later, returns ErrClosed when
// the distributor has exited, as Flush does. Shutdown is idempotent and
// safe to call from any goroutine; but called from the only reader of a
// full Block watcher, it waits for room that reader cannot make until its
// context ends (stop that watcher first). It panics on a nil context.
//
// Watcher.Stop ends one watcher; it is idempotent, never waits for a
// value to be read, and may be called from the goroutine reading it.
//
// # Compared with apimachinery's watch.Broadcaster
//
// This package carries the semantics of Kubernetes' apimachinery
// watch.Broadcaster over to any T: Block is its WaitIfChannelFull,
// DropNewest its DropIfChannelFull (which does not count), the default
// lengths are its DefaultChanSize (100) and incoming queue (25), and All
// reads several times faster than it at 10 watchers and more. Same
// guarantees (ordering, registration by a marker at a queue position,
// idempotent Stop, close by the distributor only, flush on Shutdown), with
// these differences: values are typed and markers are a typed queue item,
// never a payload; errors are the sentinel ErrClosed; Watch and TryPublish
// never wait for the distributor, nor Stop for any value; Flush; Shutdown
// is bounded by a context; a full watcher may drop its oldest value; every
// drop is counted; a prefix takes no room in the watcher's queue;
// Options.QueueLength zero means the default, not an unbuffered channel.
package broadcast
