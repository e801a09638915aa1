// Package natsbridge carries herald's typed publish/subscribe across
// processes and machines, on NATS JetStream.
//
// A Topic[T] is one JetStream stream holding values of T. Publishers in any
// process append to it; each Watcher reads it from a sequence of its own,
// in the stream's order, through a broadcast policy of its own (Block,
// DropNewest, DropOldest); a Mirror feeds a local broadcast.Broadcaster from
// one reader, for many local watchers. The engine is JetStream, not a
// protocol of herald's: a total order per stream, consumers that start at a
// sequence, replay, and publish deduplication.
//
// It lives in a module of its own, so that users of herald's core never
// download NATS. Package embedded runs a server in the process, for tests,
// demos and one machine; the same code takes a connection to a cluster.
//
// # Usage
//
//	srv, _ := embedded.Start(embedded.Options{Dir: dir}) // or nats.Connect(url, creds…)
//	nc, _ := srv.Connect()
//	js, _ := jetstream.New(nc)
//	orders, err := natsbridge.NewTopic(ctx, js, "shop.orders", natsbridge.JSON[Order](), natsbridge.TopicOptions{MaxAge: 24 * time.Hour})
//
//	p := orders.Publisher(natsbridge.PublisherOptions{})
//	_ = p.Publish(ctx, Order{ID: 1}) // waits only for room in the ack window
//	defer p.Shutdown(ctx)            // waits for every ack; the rest is counted
//
//	w, _ := orders.Watch(ctx, natsbridge.WatchOptions{Full: broadcast.Block})
//	defer w.Stop()
//	for o := range w.All() { ship(o) } // in stream order; w.Seq() is where it stands
//
// # The contract across processes
//
// What holds exactly as in one process:
//
//   - One order. Every value stored in a topic has a stream sequence, and
//     every watcher and mirror, in every process, receives values in that
//     order.
//   - A watcher gets what follows its registration. Watch fixes the
//     watcher's start sequence (Watcher.Start) before it returns: the
//     watcher is owed every value stored at that sequence or later, and no
//     value stored before. Unless WatchOptions.From says otherwise, every
//     value stored after Watch returns is owed to it and none stored
//     before Watch was called is. (A value stored while Watch runs may
//     fall on either side; Start says which.)
//   - A policy per watcher, applied by package broadcast itself: under Block
//     a full watcher stops reading from the server, which keeps the backlog;
//     DropNewest and DropOldest drop locally, and count every drop
//     (Watcher.Dropped).
//   - Nothing accepted is lost without a count. A Publisher counts each
//     value it accepted as Confirmed (stored once), Failed (refused by the
//     stream or found deleted, or out of retries; logged, see below) or
//     Unconfirmed (its Shutdown's context ended, or its connection was
//     closed, before the ack: it may or may not be stored), or Pending
//     until then. Publisher.Shutdown waits for every ack.
//   - Bad input is an error and a count, never a panic or a stalled
//     stream: a codec that fails or panics is ErrCodec for the publisher
//     and a poison message for the watcher (counted in Watcher.Poisoned,
//     logged, skipped); a value larger than the server accepts is
//     ErrTooLarge. Logging is by bursts: one line a second per kind of
//     problem, then a count of those not written (TopicOptions.Logger).
//
// What holds only within the stream's retention:
//
//   - Block is lossless while the stream still holds what the watcher has
//     not read. A watcher that falls behind the stream's limits (MaxAge,
//     MaxMsgs, MaxBytes) finds the oldest values gone; each is counted,
//     exactly once, in Watcher.Gaps (and in the topic's Stats). The same
//     holds for a watcher started, or resumed, at a sequence already
//     removed.
//   - A retried publish is stored once: the publisher sends a value again,
//     under the same Nats-Msg-Id, when its ack is lost or late, and the
//     stream drops the copy if it arrives within TopicOptions.Duplicates.
//
// What cannot hold across processes:
//
//   - Publisher back-pressure from remote watchers. In one process a Block
//     watcher holds back publishers; here the stream stands between them.
//     A publisher waits only for the server's acks (PublisherOptions.Window);
//     a slow watcher slows only itself, and past retention loses values
//     (counted as gaps).
//   - Delivered counts across processes. Each watcher counts what it
//     received (Watcher.Delivered), each publisher what the stream
//     confirmed; nothing adds them up across processes.
//   - Strict publish order under retries. Values published from one
//     goroutine are stored in the order of the calls, except that a value
//     sent again after a lost connection or a late ack may be stored after
//     values published later. Values of different publishers interleave
//     in the order the server stored them.
//   - Identity. Watchers receive codec copies of the published values,
//     never the values themselves.
//
// # Resuming
//
// A watcher knows the sequence of the last value read from it
// (Watcher.Seq). To resume after a restart, store that number and open a new
// watcher with WatchOptions{From: seq + 1}: it continues with the next value,
// or counts as gaps what retention removed meanwhile. Within one process,
// the server restarting or the connection dropping needs nothing of the
// caller: the watcher creates its consumer again where it stopped, losing
// nothing the stream still holds and repeating nothing (Watcher.Restarts
// counts these).
//
// # Failures
//
// If the stream is deleted (or deleted and created again), watchers end:
// their queued values stay readable, then they close, and Watcher.Err wraps
// ErrStreamGone; a mirror shuts its broadcaster down. A publisher counts
// each value it sends to a deleted stream as Failed, as soon as the server
// says the stream is gone; it does not notice a stream deleted and created
// again under the same name (a message carries no mark of the stream it
// was meant for): its values go to the new stream, whatever type the
// topic that made it carries. While the server is unreachable, Publish waits
// for room in its window and in the connection's own limits (bounded by
// its context), TryPublish refuses at once, and unacknowledged values are
// sent again once the connection is back.
//
// Known limits at these edges, each counted, none losing a value
// silently: Topic.Shutdown does not wait for the local readers of a
// watcher or mirror that its stream's deletion had already ended (what
// they had not read is counted as dropped at shutdown); a value removed
// from the stream after the client had fetched it (read ahead, not yet
// queued) is counted as a gap, and never delivered, if Watcher.Flush is
// called before the watcher comes to it (without such a Flush, it
// arrives), while one the watcher was already queuing can let Flush
// return just before it is queued (it still arrives, once); a purge up to
// a sequence past the stream's end counts the sequences it skips as gaps,
// though no value had them; and a watcher read through Events and All at
// once, then stopped, may yield the value the Events goroutine held after
// later ones.
//
// # Concurrency and goroutines
//
// Every type is safe for concurrent use. A Publisher owns one goroutine
// (which awaits acks), ended by Shutdown. A Watcher owns two (its feed,
// which reads the stream, and its private broadcaster's distributor),
// ended by Stop, plus one more once Events is called. A mirror owns two
// (its feed, and one that stops the feed as soon as its broadcaster's
// Shutdown begins), ended when its broadcaster shuts down (the
// broadcaster's distributor is the caller's, as with any broadcaster). A
// Forward owns one, ended by its stop function. None is started per
// value. Each consumer also runs two goroutines inside nats.go, which end
// when the feed stops reading it. Topic.Shutdown ends everything a topic
// made.
//
// # Security
//
// Topic names are checked (ErrInvalidName): dot-separated tokens of ASCII
// letters, digits, '-' and '_', so no name holds a NATS wildcard, whitespace
// or an empty token, and each topic's stream captures exactly its own
// subject: no topic can read another's values. Credentials and TLS come with
// the caller's *nats.Conn; this package never logs them, nor any value (its
// log lines carry the topic, sequences and errors; a codec's error or panic
// only by its Go type, since its text may quote the value). The embedded
// server listens on nothing, or on loopback, unless told otherwise.
package natsbridge
