// Package telemetry exports the counters of herald's components as
// OpenTelemetry metrics: one call per component registers its Stats with a
// metric.Meter as observable instruments, read by a single callback from
// one snapshot at each collection, and returns the metric.Registration
// that ends it.
//
// This package registers the core's components (Broadcaster, Correlator,
// a handle.Pool)
// and needs nothing but the core and the OpenTelemetry metric API: a
// program that imports it compiles nothing of NATS or Kubernetes, and its
// go.mod gains no nats-io or k8s.io requirement. natsbridge's publishers,
// watchers, mirrors, topics and group members are registered by the package
// telemetry/natstelemetry, Kubernetes' event broadcasters by
// telemetry/k8stelemetry: only their users compile them.
//
// # Usage
//
//	meter := otel.Meter("shop")          // or provider.Meter(...)
//	b := broadcast.New[Order](broadcast.Options{})
//	reg, err := telemetry.Broadcaster(meter, "orders", b)
//	if err != nil {
//		return err
//	}
//	defer reg.Unregister()
//	// handlers: telemetry.Pool(meter, "billing", pool)
//	// natsbridge: natstelemetry.Publisher(meter, "checkout", topic, pub), Watcher, Mirror, Topic, Member
//	// Kubernetes: k8stelemetry.EventBroadcaster(meter, eb), k8stelemetry.Events(meter, eb)
//
// # Names
//
// Every registration takes the meter first, then a name where the
// component has none of its own, then the component. One rule places the
// names: messaging.destination.name is what values flow through (the
// name given to a Broadcaster or a Correlator; a topic's own name for
// everything on a topic), and messaging.client.id is the name given to one
// client of a topic (a publisher, a watcher, a mirror) or of a source (a
// Pool); a group member is named by its group
// (messaging.consumer.group.name) and its own name. A meter takes each
// component under its names once: a second registration under the same
// names, which would report every count twice (the SDK sums two callbacks
// observing the same point), is refused with an error until the first is
// unregistered. The Kubernetes event broadcasters are named by their API
// (herald.events.api), so a meter takes one of each.
//
// # Instruments
//
// Counters are monotonic (messaging.client.* and herald.*.{dropped, failed,
// retries…}), up-down counters are counts that fall (watchers, pending),
// gauges are depths and ages. Attribute sets are built once per
// registration. Where OpenTelemetry's messaging conventions apply, they
// are used: messaging.system ("herald" for a broadcaster, "nats" for
// natsbridge), messaging.destination.name and messaging.client.id (see
// Names), messaging.operation.name, error.type for failures; herald's own
// names are herald.<component>.<what>, drops carry herald.drop.reason.
//
//	Broadcaster  messaging.client.sent.messages        {message} publish; error.type=incoming_queue_full
//	             herald.broadcast.delivered            {message} one per value per watcher
//	             herald.broadcast.dropped              {message} reason drop_newest, drop_oldest, shutdown
//	             herald.broadcast.watchers             {watcher} up-down
//	             herald.broadcast.incoming.depth       {message} gauge
//	             herald.broadcast.queue.depth          {message} gauge, the deepest watcher queue
//	             herald.broadcast.queue.oldest_age     s         gauge, the longest wait in front of a queue
//	natstelemetry.Mirror
//	             messaging.client.consumed.messages    {message} receive: values read from the stream
//	             and the herald.broadcast.* instruments, under messaging.system nats
//	natstelemetry.Publisher
//	             messaging.client.sent.messages        {message} publish; error.type=window_full, invalid
//	             herald.nats.publisher.settled         {message} confirmed; error.type=failed, unconfirmed
//	             herald.nats.publisher.pending         {message} up-down
//	             herald.nats.publisher.retries         {message}
//	             herald.nats.publisher.abandoned       {message} a Forward's
//	natstelemetry.Watcher
//	             messaging.client.consumed.messages    {message} receive
//	             herald.nats.watcher.dropped           {message} reason queue, gap, poisoned
//	             herald.nats.watcher.redelivered       {message}
//	             herald.nats.watcher.restarts          {restart}
//	             herald.nats.watcher.queue.depth       {message} gauge
//	             herald.nats.watcher.queue.oldest_age  s         gauge
//	natstelemetry.Topic
//	             herald.nats.topic.dropped             {message} reason gap, poisoned
//	             herald.nats.topic.restarts            {restart}
//	             herald.nats.topic.live                {instance} up-down
//	natstelemetry.Member (messaging.consumer.group.name, messaging.client.id the member's)
//	             herald.nats.member.partitions         {partition} gauge
//	             herald.nats.member.members            {member}  gauge, live members counted last
//	             herald.nats.member.rebalances         {rebalance}
//	             herald.nats.member.handovers          {partition}
//	             herald.nats.member.handover.duration  s         gauge, the last hand-over
//	             herald.nats.member.redelivered        {message}
//	             herald.nats.member.handed_back        {message}
//	             herald.nats.member.dropped            {message} reason gap, poisoned
//	Pool         herald.handle.received                {value}
//	             herald.handle.fates                   {value}   herald.handle.fate handled, dead_lettered, abandoned
//	             herald.handle.poisoned                {value}
//	             herald.handle.mixed                   {value}   a key that does not refine the partition key
//	             herald.handle.held                    {value}   up-down, herald.handle.state in_flight, waiting, backoff
//	             herald.handle.retries                 {attempt}
//	             herald.handle.panics                  {call}    error.type=panic
//	             herald.handle.keys                    {key}     up-down
//	             herald.handle.paused                  {pause}   gauge, 1 while reading is paused
//	             herald.handle.pauses                  {pause}
//	             herald.handle.blocked.age             s         gauge, the key held up the longest
//	Correlator   herald.correlate.results              {result}  herald.correlate.key new, repeat
//	             herald.correlate.combined, .skipped   {result}
//	             herald.correlate.panics               {call}    herald.correlate.operation correlate, stored
//	             herald.correlate.evicted              {key}
//	             herald.correlate.skipped.reported     {result}  herald.correlate.report carried, summarized
//	             herald.correlate.summaries            {summary}
//	             herald.correlate.unreported           {result}  gauge
//	k8stelemetry.EventBroadcaster, k8stelemetry.Events (herald.events.api core/v1, events.k8s.io/v1)
//	             herald.events.recorded                {event}
//	             herald.events.outcomes                {event}   created, patched, spam_skipped | series_observed
//	             herald.events.dropped                 {event}   reason invalid_object, invalid_type, closed,
//	                                                             sink_queue_full, shutdown_timeout
//	             herald.events.failed                  {event}   error.type construction, rejected, forbidden,
//	                                                             retries_exhausted, shutdown, panic
//	             herald.events.retries                 {attempt}
//	             herald.events.handler.dropped         {event}
//	             herald.events.series.writes           {write}   Events only; error.type=failed
//
// # The oldest value's age
//
// broadcast takes no time stamp per value. It numbers the values that
// enter each watcher's queue (broadcast.Backlog: Entered, Queued), and each
// collection remembers the first collection that saw each count entered:
// the value in front of a queue, number Entered-Queued, has waited at
// least since the first collection that had counted it. The age is thus
// exact to one collection interval and errs low, never high; a value
// queued before the first collection that saw its watcher counts from
// that collection. The deepest queue and the longest wait are reported
// over a broadcaster's watchers: the slow one shows.
//
// # Concurrency
//
// Every function is safe for concurrent use, and so are the callbacks,
// which the SDK may run from several readers at once. A registration keeps
// its component reachable until Unregister; it starts no goroutine.
//
// # Stability
//
// This module is at v0, released with herald's other modules at one
// version: a minor release may change its exported API, a patch release
// never does; every change is listed in the repository's CHANGELOG.md,
// and an identifier to be removed is marked Deprecated for one minor
// release first (README.md, "Stability").
package telemetry
