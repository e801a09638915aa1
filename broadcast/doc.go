// Package broadcast fans typed values out to many watchers, in order.
//
// A Broadcaster[T] owns one goroutine, the distributor. Publishers queue
// values; the distributor hands each value to every registered Watcher.
// Nothing about T is assumed (orders, jobs, alerts, log lines) except Go's
// limit on a channel's element, which Watcher.Events is: T must be smaller
// than 64 KiB; send a pointer to anything larger.
//
// # Usage
//
//	b := broadcast.New[Order](broadcast.Options{})
//	defer b.Shutdown(context.Background())
//
//	w, _ := b.Watch() // a queue watcher: read it with All or Next
//	go func() {
//		for o := range w.All() {
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
// stopped). WatchWith puts given values, a prefix, in front of those.
//
// Each watcher has a queue (Options.QueueLength, 100 by default) and a
// FullPolicy for when the queue is full: Block waits, losing nothing;
// DropNewest skips the new value for that watcher; DropOldest discards that
// watcher's oldest queued value. A full watcher never makes another one
// lose a value (until a Shutdown gives up waiting: see Shutdown). Every
// loss is counted, per watcher in Watcher.Dropped and in total in
// Broadcaster.Stats.
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
// How a watcher is read is chosen when it is made, by WatchOptions.Read,
// and no read call panics because of another.
//
// A queue watcher (ReadQueue, the default, and what Watch makes) is read
// with Watcher.All, Watcher.NextBatch or Watcher.Next. All is an iterator
// that takes all queued values in one step: it is the fastest way to
// read, with one lock and at most one wake-up per batch rather than per
// value (see bench_test.go). NextBatch takes up to n values with a
// context, under one lock, for a reader with bounded room to hand them
// on; Next takes one value with a context. They can be mixed: they share
// one queue, and the values an All loop took but did not yield go back
// to the front of it, in order. Events on a queue watcher
// returns a closed channel: make a watcher meant for select statements
// with WatchOptions{Read: ReadChannel}.
//
// A channel watcher (ReadChannel) is read with Watcher.Events, for select
// statements: the distributor sends its values straight into a channel of
// the watcher's queue length (plus room for a prefix). Next, NextBatch and
// All on a channel watcher read that channel, and mix with receives from
// it.
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
// Broadcaster.Shutdown stops new publishing: Watch, WatchWith, Publish and
// TryPublish return errors wrapping ErrClosed from the moment it begins,
// and Broadcaster.Done is closed. It delivers everything queued before it, then closes every
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
// every other Shutdown call, concurrent or later, returns an error
// wrapping ErrClosed when the distributor has exited, as Flush does. Shutdown is idempotent and
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
// never a payload; errors wrap the sentinel ErrClosed and name the call
// that met the closed broadcaster; Watch gives a queue watcher (read with
// All or Next), WatchWith a channel watcher on request; Watch and
// TryPublish never wait for the distributor, nor Stop for any value;
// Flush; Shutdown
// is bounded by a context; a full watcher may drop its oldest value; every
// drop is counted; a prefix takes no room in the watcher's queue;
// Options.QueueLength zero means the default, not an unbuffered channel.
//
// # API changes
//
// Before the first tagged release:
//   - A watcher's read mode is chosen when it is made (WatchOptions.Read,
//     ReadMode), no longer by its first read: Watch makes a queue watcher,
//     whose Events returns a closed channel (it used to make the watcher a
//     channel watcher when called first, and to panic after Next or All);
//     WatchWith(WatchOptions{Read: ReadChannel}) makes a channel watcher.
//   - WatchWithPrefix(prefix) is gone: use WatchWith(WatchOptions{},
//     prefix...).
//   - The errors returned for a closed broadcaster or watcher wrap
//     ErrClosed and name the call and what to do; compare with errors.Is.
package broadcast
