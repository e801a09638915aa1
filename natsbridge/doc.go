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
// # Three guarantees, and which option gives which
//
// A watcher's policy and whether it is durable choose how often a value
// reaches a reader:
//
//   - At most once: DropNewest or DropOldest. A full watcher drops (and
//     counts) values; none comes twice.
//   - Exactly once, within one process and the stream's retention: Block.
//     The watcher holds back the stream, never the publishers, and gets
//     every value once, in order; a watcher that stops (or a process that
//     dies) loses its place unless the application saved Seq().
//   - At least once, across crashes: Durable (WatchOptions.Durable). The
//     server keeps the position; the values after the last one
//     acknowledged come again to the next reader (Watcher.Redelivered
//     counts them, Seq() identifies them): exactly once for an application
//     that handles a value idempotently by its sequence, and across a clean
//     Stop, which acknowledges what was read.
//
// # The contract across processes
//
// What holds exactly as in one process:
//
//   - One order. Every value stored in a topic has a stream sequence, and
//     every watcher and mirror, in every process, receives values in that
//     order.
//   - One publisher's order. The stream stores a Publisher's values in the
//     order it accepted them (from one goroutine: the order of the calls),
//     each once, whatever happens on the way: a lost connection, a server
//     killed and restarted, a leader elected, a quorum lost and regained
//     (see "Order" below). Values of different publishers interleave in
//     the order the stream stored them.
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
//     stream or found deleted, or not confirmed within its delivery
//     timeout; logged, see below) or Unconfirmed (its Shutdown's context
//     ended, or its connection was closed, before the ack: it may or may
//     not be stored), or Pending until then. Publisher.Shutdown waits for
//     every ack. A watcher counts each value owed to it as read, dropped
//     (by its policy, or read from the stream but not yet queued when it
//     was stopped: Watcher.Dropped), a gap or a poison message.
//   - Bad input is an error and a count, never a panic or a stalled
//     stream: a codec that fails or panics is ErrCodec for the publisher
//     and a poison message for the watcher (counted in Watcher.Poisoned,
//     logged, skipped); a value larger than a message can carry (the
//     server's max payload, less the 94 bytes and the stream's name that
//     the headers of every message take) is ErrTooLarge, before anything
//     is sent. Logging is by bursts: one line a second per kind of
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
//   - A value sent again is stored once: the publisher sends a value again,
//     under the same Nats-Msg-Id, when the stream may not have stored it,
//     and the stream drops the copy if it arrives within
//     TopicOptions.Duplicates (a publisher stops sending a value after its
//     delivery timeout, by default that same window).
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
//   - Identity. Watchers receive codec copies of the published values,
//     never the values themselves.
//
// # Reading
//
// A Watcher is read with All (the fastest, a batch per step), Next (one
// value, with a context) or Events (a channel, for select statements). Its
// first read chooses how, as broadcast's watchers do: Events first makes a
// channel watcher, on which All and Next read the channel too; All or Next
// first makes a queue watcher, on which Events panics. Values still queued
// when a watcher stops stay readable, in order, with All and Next.
//
// # Tracing
//
// Publish carries the trace context of its ctx to the watchers, in the
// message's headers, with OpenTelemetry's global propagator
// (otel.GetTextMapPropagator: W3C "traceparent" and "tracestate" headers
// once the application has set propagation.TraceContext). natsbridge uses
// OpenTelemetry for propagation only: it starts no span. With no
// propagator set (OpenTelemetry's default, a no-op), a message carries no
// header beyond natsbridge's own, and nothing is allocated for tracing.
//
//	ctx, span := tracer.Start(ctx, "order placed")
//	_ = p.Publish(ctx, o) // its message carries span's context
//	span.End()
//
//	for o := range w.All() {
//		ctx, span := tracer.Start(w.Context(ctx), "ship") // a child of the publisher's span
//		ship(ctx, o)
//		span.End()
//	}
//
// Watcher.Context returns its parent with the trace context of the last
// value read, extracted with the same propagator, as a remote span
// context, or the parent itself if that value carried none; like Seq, it
// is exact when one goroutine reads with All or Next. A value sent again
// (a retry, a new batch after a failover) carries the same headers, and a
// value that comes again to a durable watcher carries its trace context
// again. Values carry none when published with TryPublish (it takes no
// context) or by Forward (a broadcaster's values carry no context); a
// mirror's local watchers receive values only, through a
// broadcast.Broadcaster, with no trace context: read through a Watcher
// where it matters.
//
// The limit of a value's size does not depend on tracing: ErrTooLarge
// comes at the server's max payload less natsbridge's own headers, with
// or without a propagator. A value that fits only without its trace
// context (within about 70 bytes of the limit, with W3C trace context) is
// sent without it, and logged.
//
// # Order
//
// A publisher sends its values as JetStream fast batches (nats-server 2.14
// or later; NewTopic enables them on the stream), in the mode where a batch
// stores a value only right after the one before it: a value lost on the
// way ends the batch, with an answer that says how many of its values were
// stored, and the publisher sends the rest again, in order, in a new batch,
// under the same message ids. A new batch begins only when no value of the
// last one is in flight, with the oldest value not yet confirmed. So the
// stream stores the publisher's values in order, each once, within
// TopicOptions.Duplicates. The one exception is a value that fails after
// its delivery timeout (PublisherOptions.DeliveryTimeout): it may have been
// stored, its acks lost, and a copy of it still on its way may then land
// after values accepted later; the values after it keep their order.
//
// PublisherStats.Retries counts every send of a value after its first:
// each went on the wire (nothing is sent again behind the publisher's
// back). The stream acks a batch every few hundred values and when it
// ends; a publisher ends its batch whenever it has nothing more to send
// for a moment (5ms), and in Shutdown. A value with none behind it goes
// alone, as a batch of one that the stream acks at once.
//
// # Durable watchers
//
// A durable watcher's position lives on the server, in a durable consumer
// named by WatchOptions.Durable: the value after the last one its
// application read and acknowledged. A watcher acknowledges what its
// application read in batches (after 256 values, or 100ms), and at Stop
// before it returns, waiting for the server's answer; values read after
// Stop began are not acknowledged. The first Watch with a name creates the
// position (at WatchOptions.From, or what follows); later ones, in any
// process, join it as it is.
//
// Every process watching with the same name shares the position, and one
// at a time reads from it, in stream order: the active reader. The others
// stand by and receive nothing. A reader that stops hands over at once:
// the next value goes to a standby, which reads on from the value after the
// last one the stopped reader read, nothing repeated. A reader that dies
// (SIGKILL, a lost machine) keeps its turn until the server has heard
// nothing from it for WatchOptions.Takeover (DefaultTakeover; an active
// reader asks at least twice per Takeover): then a standby takes over,
// within Takeover and half of it, from the value after the last one
// acknowledged; what the dead reader was given and had not acknowledged
// comes again, in order, counted in Redelivered (TestDurableTakeover
// measured 1.9s with Takeover 2s, 320 values redelivered, and a clean
// hand-over in 2ms). A reader whose application reads nothing for
// Takeover (a Block watcher whose queue stays full) loses its turn too; it
// hands out what it holds, which the next reader gets again (at least
// once). In a cluster, a change of the consumer's leader (its node killed)
// forgets whose turn it is: the next value goes to whichever reader asks
// first, from the value after the last one acknowledged, and the previous
// reader may still hand out what it holds (read by both: at least once;
// TestClusterDurable).
//
// A durable position lives until Topic.DeleteDurable deletes it, or its
// stream is deleted: an abandoned one costs the server a consumer's state
// and nothing more (the stream keeps values by its own limits, not for its
// consumers). Retention still applies: values removed before the position
// reached them are counted as gaps by the reader that comes to them.
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
// topic that made it carries. While the server is unreachable, Publish
// accepts values until its window is full and then waits for room (bounded
// by its context), TryPublish refuses once the window is full, and the
// values the stream did not store are sent again once the connection is
// back.
//
// A leader change in a cluster (the leader killed, or stepping down) needs
// nothing of the caller. While no leader is elected (5 to 9 seconds with
// nats-server's defaults, measured on a three-node cluster on one machine)
// nothing is stored: Publish accepts values into the window (Window), then
// waits for room; Block watchers wait. The new leader tells each publisher
// where its batch stands, and a publisher that hears nothing asks (after
// AckTimeout, and again at most every second; after "no responders", with
// a wait from 25ms growing to 500ms). It never sends a copy of a value
// before the server has said that the batch carrying it ended or is
// unknown: a copy sent while the first is still being written (a leader
// that lost its quorum) would be skipped as a duplicate and acked, and
// lost if that leader then died. The backlog goes out in order in a new
// batch: the publisher confirmed values again within 30ms of the election
// when the new leader told it (TestClusterLeaderKilled), and within a
// second when its values got no answer at all (TestClusterQuorumLost,
// TestHostileLoneValueNoAnswer). A watcher's consumer on the killed node is created
// again on another once the cluster answers: Block watchers stalled for the
// election plus up to two seconds (one whose new leader was killed too
// before it resumed stalled through both: 15s for elections of 7s and 6s,
// TestClusterLeaderKilled). A quorum lost and regained is the same, for
// as long as it lasts (TestClusterQuorumLost: ten seconds, a plain
// subscriber on the subject so that publishes got no answer at all). A
// single server killed and restarted on its store costs a publisher about
// one round of reconnection (40 to 200ms measured) and a watcher one
// heartbeat (TestServerKilledMidStream); no acknowledged value was lost,
// with the default sync interval and with sync_interval: always (a
// process kill is not a machine crash: see the server's sync_interval).
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
// though no value had them.
//
// # Concurrency and goroutines
//
// Every type is safe for concurrent use. A Publisher owns one goroutine
// (which takes acks as time passes, sends again, ends batches), ended by
// Shutdown, and one subscription to the server's answers, whose goroutine
// inside nats.go ends with it. A Watcher owns two (its feed,
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
// # Shutdown
//
// Whatever owns a goroutine has one call that ends it: Publisher.Shutdown,
// Watcher.Stop, the mirror's Broadcaster.Shutdown, the stop function that
// Forward returns, and Topic.Shutdown for everything the topic made that
// is still live. Each is idempotent and safe to call from any goroutine
// (Watcher.Stop also from the one reading); one that takes a ctx panics on
// a nil ctx before it begins. Each follows one sequence: it stops taking
// new work at once, finishes what it holds, and, if its ctx ends first,
// abandons the rest, counts it, and returns ctx.Err(). It returns only
// once its goroutines have exited, whatever it returns, with one
// exception: a mirror's Broadcaster.Shutdown returns once its distributor
// has exited, while the goroutine reading the stream for it is told to
// stop and may still be deleting its consumer (at most 2s); Topic.Shutdown
// waits for that goroutine too.
//
// Publisher.Shutdown: Publish and TryPublish return ErrClosed from the
// moment it begins. It waits until the stream has confirmed every accepted
// value, sending values again as usual, and returns nil once each is
// confirmed or failed (see Stats). If ctx ends first, the values left are
// counted as Unconfirmed and it returns ctx.Err(). Once values ended
// unconfirmed (given up by another Shutdown, or their acks lost with a
// closed connection), every later Shutdown returns ErrUnconfirmed (or its
// own ctx.Err()), never nil.
//
// Watcher.Stop stops reading the stream, deletes the watcher's consumer
// and closes its queue; it never waits for a value to be read. Values
// already queued stay readable with Next and All; the Events channel is
// closed. The deletion of the consumer waits for the server at most 2s
// (Topic.Shutdown bounds it by its context instead). A durable watcher
// acknowledges what its application read, and hands its turn over.
//
// Forward's stop stops taking values from the broadcaster and publishes
// those already taken. If its ctx ends first, it abandons the rest, counts
// them in the publisher's Stats().Abandoned and returns ctx.Err(); values
// are also abandoned, and counted, if the publisher shuts down first. It
// does not shut the publisher down. If the broadcaster was shut down before
// Forward, nothing is forwarded and stop returns ErrClosed.
//
// Topic.Shutdown ends every Publisher, Watcher and Mirror the topic made
// that is still live, each as above (a mirror stops reading, then its
// broadcaster shuts down); the stream stays on the server. After it has
// begun, Publisher, Watch and Mirror return ErrClosed (or a Publisher that
// is already shut down). It returns once all have ended: ctx.Err() if ctx
// ended first (what was then abandoned is counted as each one documents),
// ErrUnconfirmed if the values of a publisher still live when it began
// ended unconfirmed (given up by another Shutdown of its own running
// meanwhile, or their acks lost to the connection's end), nil otherwise. A
// publisher whose own Shutdown had ended before is no longer the topic's:
// its Shutdown said what it left.
//
// # Errors and panics
//
// What a caller passes in that no call could work with, a mistake to fix
// in the calling code, is refused by the call it is given to, with a
// message that names it ("natsbridge: negative PublisherOptions.Window"):
// with an error where that call returns one, with a panic where it returns
// none. So an invalid option (a negative size or limit, a duration outside
// its range, a limit exceeded, an unknown policy or storage) or name is an
// error from NewTopic, Watch, Mirror and DeleteDurable, and a panic from
// Topic.Publisher; a nil Broadcaster or Publisher is a panic from Forward,
// a nil JetStream or Codec an error from NewTopic. A nil ctx panics in
// every call, as in the standard library.
//
// What depends on the server's state is always an error, never a panic: a
// stream configured otherwise (ErrConfigDiffers), carrying another type
// (ErrTypeMismatch) or serving other subjects (ErrNameConflict), a deleted
// stream (ErrStreamGone), a start beyond the stream's end (ErrBadStart), a
// closed connection. Errors callers branch on are sentinels (see the
// variables), wrapped with the detail: test them with errors.Is.
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
//
// # Stability
//
// This module is at v0, released with herald's other modules at one
// version: a minor release may change its exported API, a patch release
// never does; every change is listed in the repository's CHANGELOG.md,
// and an identifier to be removed is marked Deprecated for one minor
// release first (README.md, "Stability").
package natsbridge
