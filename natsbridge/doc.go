// Package natsbridge carries herald's typed publish/subscribe across
// processes and machines, on NATS JetStream.
//
// A Topic[T] is one JetStream stream holding values of T. Publishers in any
// process append to it; each Watcher reads it from a sequence of its own, in
// the stream's order, through a queue of its own; a Mirror feeds a local
// broadcast.Broadcaster from one reader, for many local watchers. Package
// embedded runs a server in the process (tests, demos, one machine); the
// same code takes a connection to a cluster. The package lives in a module
// of its own, so that users of herald's core never download NATS.
//
// # Usage
//
//	nc, _ := nats.Connect(url)           // or embedded.Start(…) and srv.Connect()
//	js, _ := jetstream.New(nc)
//	orders, err := natsbridge.NewTopic(ctx, js, "shop.orders", natsbridge.JSON[Order](),
//		natsbridge.TopicOptions{Schema: "shop.Order/v1", MaxAge: 24 * time.Hour})
//
//	p, err := orders.Publisher(natsbridge.PublisherOptions{})
//	err = p.Publish(ctx, Order{ID: 1}) // waits only for room in the ack window
//	defer p.Shutdown(ctx)              // waits for every ack; the rest is counted
//
//	w, err := orders.Watch(ctx, natsbridge.WatchOptions{Durable: "billing"})
//	defer w.Shutdown(ctx)
//	for o := range w.All() {
//		charge(o, w.Seq()) // acknowledged once this body returns
//	}
//
// # Three guarantees
//
// How often a value reaches a watcher's handler is the watcher's choice:
//
//   - At most once: WatchOptions.Full set to broadcast.DropNewest or
//     broadcast.DropOldest. A full queue drops values (each counted in
//     Stats); none is handled twice. Costs nothing: a slow handler loses
//     values rather than slowing anything down.
//   - Exactly once within a process: broadcast.Block, the default. Every
//     value the stream stores from the watcher's start on is handled once,
//     in order, while the stream retains it; a full queue stops the
//     watcher's reading (the stream keeps the backlog), never a publisher.
//     A process that dies loses its place unless it saved Seq (see
//     WatchOptions.From).
//   - At least once per handler, across crashes: WatchOptions.Durable. The
//     server keeps the position; a value is acknowledged only once its
//     handler is done with it (an All loop's body returned, the next Next
//     was called, or Watcher.Done named it), so a value whose handler was
//     running when its process died comes again to the next reader, with
//     the values after it. Exactly once for a handler idempotent by Seq,
//     and across a clean Stop. Costs an acknowledgement per batch and a
//     small write per reservation (see Durable watchers), and a standby
//     process per durable name for high availability. On one server, the
//     server's pin (its id in every message delivered) costs a bare
//     consumer about a sixth more processor time per value read, and
//     herald's reading about an eighth more than a bare consumer pinned
//     the same way (README.md, "Durable watchers").
//
// # What holds across processes
//
//   - One order. Every value stored has a stream sequence, and every
//     watcher and mirror, in every process, receives values in that order.
//   - One publisher's order. The stream stores a Publisher's values in the
//     order it accepted them, each once, through lost connections, killed
//     servers, leader elections and lost quorums (see Publisher).
//   - A watcher gets what follows its registration: Watch fixes its start
//     sequence (Watcher.Start) before it returns.
//   - Nothing accepted is lost without a count. A publisher counts each
//     value Confirmed, Failed, Unconfirmed or Pending (PublisherStats); a
//     watcher counts each value owed to it as read, queued, dropped by its
//     policy, a gap (removed by retention first), a poison message (the
//     codec could not decode it) or handed back (WatcherStats).
//   - Bad input is an error and a count, never a panic or a stalled stream:
//     a codec that fails or panics is ErrCodec for the publisher and a
//     poison message for the watcher; a value too large for a message is
//     ErrTooLarge before anything is sent. Logging is by bursts: one line
//     a second per kind of problem, then a count (TopicOptions.Logger).
//
// What cannot hold: a remote watcher does not hold back publishers (the
// stream stands between them; a slow Block watcher slows only itself, and
// past retention counts gaps), and watchers receive codec copies of the
// values, never the values themselves.
//
// # Reading
//
// A watcher is read with All (the fastest) or Next, or, made with
// WatchOptions.Read set to broadcast.ReadChannel, with Events, whose channel
// All and Next read too; the read mode is fixed when the watcher is made
// (Events on a queue watcher is a closed channel). A durable watcher is a
// queue watcher: a channel cannot say when its reader is done with a value.
// Seq and Context say which value was read last: its stream sequence and
// the trace context of the Publish call that sent it.
//
// # Durable watchers
//
// Every process watching with the same WatchOptions.Durable name shares
// one position on the server, and one at a time reads from it, in stream
// order: the active reader; the others stand by. The active reader keeps
// its turn for as long as its process lives, however slow its handlers
// (it renews the server's pin while they work). It hands its turn over
// when it stops (Watcher.Stop: at once, once its handlers are done) or
// dies (SIGKILL, a lost machine: after WatchOptions.Takeover, from the
// value after the last one acknowledged).
//
// Beside the position, in a key-value bucket of the topic's
// (herald_<stream>), the active reader keeps a record: that it owns the
// position, and the highest sequence it may have handed out, reserved
// ahead of its application (about twice what it handed out in the last
// 100ms). A reader that takes over counts the values up to that record
// that come to it again in WatcherStats.Redelivered: every value handed
// out twice, and at most the dead reader's reservation beyond them; the
// values it had only fetched ahead are not counted. A reader whose record
// another took over stops handing out at once. So does one that could not
// renew its lease (the record out of reach), before the lease ends: it
// gives its turn up, and if it gets it back with no other reader between,
// it reads on from the first value it held back; what its handlers hold
// does not come again.
//
// In a cluster, a change of the consumer's leader forgets whose turn it
// is: the next value may go to another reader, which takes over from the
// last value acknowledged, while the first may still hand out what it had
// reserved (at least once still holds; TestClusterDurable measures the
// overlap). README.md in this directory has the measurements.
//
// # Partitions and consumer groups
//
// One stream has one leader, through which every write and every
// acknowledgement passes, and a durable position one active reader. A
// Partitioned topic (NewPartitioned) is P streams, one per partition, so
// that a cluster spreads their leaders over its nodes: writes grow with
// the nodes. (One stream with P subjects would share the reading out but
// leave every write to one leader; see README.md, "Partitions", for the
// measurements and the model of throughput by cores and nodes.) A value
// goes to partition (Murmur2(key) & 0x7fffffff) % P of its partition key,
// as Kafka's default partitioner routes it, so that programs in other
// languages route alike. Each partition keeps a topic's guarantees.
//
// A consumer group (Partitioned.Join) shares the partitions among its
// live members, one reader per partition at a time, on the durable
// mechanism above: a member that leaves or loses a partition to a
// newcomer hands it over once its handlers are done with what they hold;
// a member that dies loses its partitions after the takeover time. A
// member is a source for a handle.Pool, whose key must be the partition
// key (Member.Key) or refine it (Refine): the Pool counts and logs a key
// that joins values of two partitions (handle.Stats.Mixed). Membership is
// elastic (whoever is alive); a member that names itself
// (GroupOptions.Member, a StatefulSet's pod name) and comes back within
// the takeover time finds its partitions as it left them, which covers
// static membership's use.
//
// Limits. The number of partitions is fixed when the topic is made: a
// key's partition depends on it, and changing it would move keys to
// partitions that hold none of their earlier values, out of order. To
// change it, make a new topic and move readers over once the old one is
// drained. A rebalance costs each partition that moves one hand-over:
// its old owner's handlers finish what they hold (up to the Pool's
// Window of values, however long their handlers take: a stuck handler
// holds its partition where it is), then the new owner reads on; a
// member that dies costs the takeover time, and the values it had not
// finished come again.
//
// # Why not JetStream's ordered consumer
//
// The benchmarks use nats.go's ordered consumer as the baseline of a plain
// read, and herald's watchers do not use it: it recreates its consumer by
// itself when a delivery goes missing, so a reader cannot tell a value
// lost on the way from one removed by retention, nor count restarts; it
// has no durable form, no priority group and no acknowledgement, which
// durable watchers need; and it gives no hook to stop reading when a
// Block queue is full. One feed serves every watcher instead: a consumer
// herald makes (again, where it stopped, when it is lost), whose
// deliveries it checks against the server's count.
//
// # Goroutines and shutdown
//
// Every type is safe for concurrent use. A Publisher owns one goroutine,
// ended by its Shutdown; a Watcher one (its feed) and, if durable, a
// second (its keeper), ended by Stop or Shutdown; a mirror one, ended with
// its broadcaster's Shutdown; a Forward one, ended by its stop function.
// None is started per value. Topic.Shutdown ends everything the topic made.
// Each end call stops taking new work at once, finishes what it holds,
// and, if its ctx ends first, abandons the rest, counts it, and returns
// ctx.Err(); each is idempotent and safe from any goroutine.
//
// # Errors
//
// What a caller passes in that no call could work with (an invalid option
// or name, a nil codec) is an error from the call it is given to, naming
// it; a nil ctx panics, as in the standard library. What depends on the
// server's state is an error, never a panic. Errors callers branch on are
// sentinels, wrapped with the detail: test them with errors.Is.
//
// # Security
//
// Topic, durable and group names are checked (ErrInvalidName):
// dot-separated tokens of ASCII letters, digits, '-' and '_', so no name
// holds a NATS wildcard, whitespace or an empty token, and each topic's
// stream captures exactly its own subject: no topic can read another's
// values. Credentials and TLS come with
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
