// Package handle runs handlers on the values of a herald source in
// parallel, while each key's values keep their order, and gives every
// value a counted fate: handled, dead-lettered, or abandoned at shutdown.
//
// # Usage
//
//	w, _ := orders.Watch()                     // a broadcast.Watcher, or a natsbridge.Watcher
//	p := handle.New(w, Order.CustomerID, ship, handle.Options{Workers: 16})
//	defer p.Shutdown(ctx)
//	go func() {
//		for d := range p.DeadLetters().All() { alert(d.Key, d.Err) }
//	}()
//
// ship runs on up to 16 values at once; the values of one customer one at
// a time, in the order the source delivered them. A nil key function makes
// every value its own key: all in parallel, in no order.
//
// # Failures
//
// A handler that returns an error, or panics, or calls runtime.Goexit
// (t.FailNow does), fails its value: the value is handled again after a
// wait (about Options.RetryMin, doubling up to RetryMax, with jitter), and
// the values after it with its key wait behind it; other keys go on. After
// Options.MaxAttempts attempts, or at once for an error marked Permanent,
// the value is given up as a dead letter, with its key, its last error, its
// attempts and when they began. A value its source could not decode (a
// poison message) is a dead letter before any handler runs. Dead letters go
// to Pool.DeadLetters, a watcher (read it: when its queue is full, giving
// up waits), or, for a source that keeps them (a natsbridge watcher with a
// dead-letter topic: see DeadLetterSink), to the source, stored before the
// value is marked done.
//
// # Durable sources
//
// An AckSource (a durable natsbridge.Watcher) is told when each value has
// its fate, in any order; it acknowledges the contiguous prefix, so a
// crash sends again only what was not finished. The attempts a value had
// before a crash count (Delivery.Attempt): a value that kills its process
// every time is dead-lettered after MaxAttempts. Options.Window bounds how
// far reading runs ahead of a held value: past it the Pool stops reading
// (Stats().Paused), so that a crash sends at most that many again. A
// TurnSource (a durable natsbridge.Watcher or Member) is asked, before
// each attempt, whether its reader still holds the value: a reader paused
// past its lease, whose position another reader may take over, begins
// none of the values it holds until it knows (see TurnSource).
//
// # Order, throughput and a hot key
//
// A key's values are handled by one worker at a time, so one key moves at
// most at the speed of one handler. A key that receives more than one
// worker can handle fills the Pool: its values wait behind each other, the
// Pool holds Options.QueueLength of them and stops reading, and every
// other key, whose values come from the same ordered source behind them,
// waits too. Stats().Blocked names the key that holds its values up the
// longest, for how long and how many wait behind it; the Pool logs a key
// that holds them longer than Options.SlowKey.
//
// # Counts
//
// In every Stats snapshot, Received = Handled + DeadLettered + InFlight +
// Waiting + Backoff + Abandoned; Retries counts the attempts after a
// failure.
//
// # Goroutines and shutdown
//
// New starts a reader, a supervisor (retries and slow keys) and
// Options.Workers workers; none per value or per key. A handler or a key
// function that calls runtime.Goexit ends the goroutine it runs on: its
// value fails (a handler's: see Failures; a key function's is a dead letter
// at once, as when it panics), and a new goroutine takes its place. A
// source's read (Next, Receive, NextBatch) that calls it ends the reading,
// and Err says so (unless the Pool is stopping). Other code the Pool calls
// (a Logger, a DeadLetterSink, an AckSource's Done, a TurnSource's Holds)
// must return: one that calls runtime.Goexit may leave a value without a
// fate. A key that holds no value keeps its small state, idle, until idle
// keys outnumber max(4096, Options.QueueLength) (counted by shard, below);
// then every idle key's state of its shard is freed.
//
// Inside, keys are spread by their hash over shards (a power of two, at
// most one per worker and 16), each with its own lock: the reader hands
// each shard its part of a batch under one lock, and a worker takes the
// keys of its own shard first, then of the others, so that workers seldom
// meet on a lock (Stats and Shutdown take every shard's; the supervisor
// each in turn, once per retry due and per 100ms tick). A shard whose
// workers are all held in slow handlers while the others keep to their
// own is found at the supervisor's tick (its first waiting value has not
// moved since the last): the next worker that finishes a value goes
// there. So a slow handler holds its key's values, and its shard's other
// keys for a tick or two at most.
// Shutdown stops reading, lets the handlers in flight finish within its
// ctx, abandons the rest (a durable source hands it back to the server at
// once), and stops the source. Flush returns once every value received
// before it has its fate.
package handle
