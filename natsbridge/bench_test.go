package natsbridge_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
	"github.com/heraldgo/herald/natsbridge/natstest"
)

// The benchmarks run against real servers reached over loopback TCP, storing
// in temporary directories (file storage, the default): one server in the
// process (server=single), and a cluster of three nats-server processes
// with every stream replicated three times (server=cluster). The engine in
// these numbers is the one users run. Each sub-benchmark has a stream of
// its own, deleted when it ends; sub-benchmarks alternate within a run, so
// compare them with benchstat in one table:
//
//	go test -run '^$' -bench 'Publish|Read' -benchtime 100000x -count 10 . > pr.txt
//	benchstat -row /server -col /impl pr.txt
//	go test -run '^$' -bench Failover -benchtime 1x -count 5 . > fo.txt
//	go test -run '^$' -bench EndToEnd -benchtime 20000x -count 6 . > e2e.txt
//	go test -run '^$' -bench Latency -benchtime 5000x -count 6 . > lat.txt
//	benchstat -row /watchers -col /via e2e.txt lat.txt
//
// Publish and EndToEnd time every value until it is acknowledged (and, for
// EndToEnd, read by every watcher): the loop runs b.N times and the wait
// for the acks, which is part of the work, comes after it, inside the
// timed region. That is why they count with b.N rather than b.Loop.

var benchTopics atomic.Int64

// benchEnv is a server (or cluster) and a TCP connection to it, shared by
// one benchmark's sub-benchmarks.
type benchEnv struct {
	js       jetstream.JetStream
	replicas int
	cluster  *natstest.Cluster // nil for one server
}

func newBenchEnv(b *testing.B) benchEnv {
	s := startServer(b, embedded.Options{Listen: "127.0.0.1:0"})
	_, js := dial(b, s.URL())
	return benchEnv{js: js, replicas: 1}
}

// benchEnvs returns one server in the process, and a cluster of three
// processes with Replicas: 3.
func benchEnvs(b *testing.B) map[string]benchEnv {
	c := natstest.StartCluster(b, 3, natstest.Options{})
	_, js := dial(b, c.URL())
	return map[string]benchEnv{
		"single":  newBenchEnv(b),
		"cluster": {js: js, replicas: 3, cluster: c},
	}
}

// benchTopic returns a fresh topic on a file-backed stream, deleted when b
// ends.
func benchTopic[T any](b *testing.B, env benchEnv) *natsbridge.Topic[T] {
	name := "bench" + strconv.FormatInt(benchTopics.Add(1), 10)
	t := newTopicOf(b, env.js, name, natsbridge.JSON[T](), natsbridge.TopicOptions{Replicas: env.replicas})
	b.Cleanup(func() { _ = env.js.DeleteStream(context.Background(), t.Stream()) })
	return t
}

// BenchmarkPublish publishes small values and waits for every ack:
// natsbridge's Publisher against a bare jetstream PublishAsync loop with the
// same codec and a message id on every value (as the Publisher sets, for
// retries; the stream's deduplication costs the server a little). The
// Publisher keeps each publisher's values in order across failures (fast
// batches); the bare loop does not. impl=natsbridge runs with no
// propagator set (OpenTelemetry's default); impl=natsbridge-traced with
// W3C trace context set and a span in Publish's ctx: each message carries
// a traceparent header.
func BenchmarkPublish(b *testing.B) {
	envs := benchEnvs(b)
	for _, server := range []string{"single", "cluster"} {
		env := envs[server]
		b.Run("server="+server+"/impl=natsbridge", func(b *testing.B) { benchPublish(b, env, false) })
		b.Run("server="+server+"/impl=natsbridge-traced", func(b *testing.B) { benchPublish(b, env, true) })
		b.Run("server="+server+"/impl=jetstream-msgid", func(b *testing.B) { benchBarePublish(b, env) })
	}
}

// tracedCtx returns ctx as it is, or, if traced, under a span, with W3C
// trace context set as the global propagator until b ends.
func tracedCtx(b *testing.B, ctx context.Context, traced bool) context.Context {
	if !traced {
		return ctx
	}
	tracer, _ := tracing(b)
	ctx, span := tracer.Start(ctx, "bench")
	b.Cleanup(func() { span.End() })
	return ctx
}

func benchPublish(b *testing.B, env benchEnv, traced bool) {
	ctx := tracedCtx(b, context.Background(), traced)
	topic := benchTopic[Order](b, env)
	p := publisher(b, topic, natsbridge.PublisherOptions{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := p.Publish(ctx, Order{ID: i, Item: "book"}); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if st := p.Stats(); st.Confirmed != uint64(b.N) {
		b.Fatalf("%s", describe(st))
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "values/s")
}

// benchBarePublish is the bare loop. It lets PublishAsync wait as long as
// it takes when its own limit of acks in flight (4000) is reached: with the
// default stall wait (200ms) a loaded machine makes it fail.
func benchBarePublish(b *testing.B, env benchEnv) {
	ctx := context.Background()
	codec := natsbridge.JSON[Order]()
	topic := benchTopic[Order](b, env)
	subject, prefix := topic.Name(), nuid.Next()+"-"
	stall := jetstream.WithStallWait(time.Minute)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		data, err := codec.Marshal(Order{ID: i, Item: "book"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := env.js.PublishAsync(subject, data, stall, jetstream.WithMsgID(prefix+strconv.Itoa(i))); err != nil {
			b.Fatal(err)
		}
	}
	<-env.js.PublishAsyncComplete()
	b.StopTimer()
	info, err := env.js.Stream(ctx, topic.Stream())
	if err != nil {
		b.Fatal(err)
	}
	if got := info.CachedInfo().State.Msgs; got != uint64(b.N) {
		b.Fatalf("stream holds %d values, want %d", got, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "values/s")
}

// BenchmarkRead reads b.N values stored before the timer starts: a Block
// watcher from the first sequence (Watch, All) against a bare jetstream
// ordered consumer that decodes with the same codec. impl=natsbridge-traced
// reads values published under a span, with W3C trace context set, and
// takes each value's context (Watcher.Context).
func BenchmarkRead(b *testing.B) {
	envs := benchEnvs(b)
	for _, server := range []string{"single", "cluster"} {
		env := envs[server]
		b.Run("server="+server+"/impl=natsbridge", func(b *testing.B) { benchRead(b, env, "natsbridge") })
		b.Run("server="+server+"/impl=natsbridge-traced", func(b *testing.B) { benchRead(b, env, "natsbridge-traced") })
		b.Run("server="+server+"/impl=jetstream-ordered", func(b *testing.B) { benchRead(b, env, "jetstream-ordered") })
	}
}

func benchRead(b *testing.B, env benchEnv, impl string) {
	traced := impl == "natsbridge-traced"
	ctx := tracedCtx(b, context.Background(), traced)
	topic := benchTopic[Order](b, env)
	p := publisher(b, topic, natsbridge.PublisherOptions{})
	for i := range b.N {
		if err := p.Publish(ctx, Order{ID: i, Item: "book"}); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	if impl == "jetstream-ordered" {
		bareRead(b, env, topic.Stream())
	} else {
		w, err := topic.Watch(ctx, natsbridge.WatchOptions{From: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(w.Stop)
		next := 0
		for o := range w.All() {
			if o.ID != next {
				b.Fatalf("value %d when %d was due", o.ID, next)
			}
			if traced && !trace.SpanContextFromContext(w.Context(ctx)).IsRemote() {
				b.Fatalf("value %d without its trace context", o.ID)
			}
			if next++; next == b.N {
				break
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "values/s")
}

func bareRead(b *testing.B, env benchEnv, stream string) {
	ctx := context.Background()
	codec := natsbridge.JSON[Order]()
	s, err := env.js.Stream(ctx, stream)
	if err != nil {
		b.Fatal(err)
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	it, err := c.Messages()
	if err != nil {
		b.Fatal(err)
	}
	defer it.Stop()
	for i := range b.N {
		m, err := nextMessage(it)
		if err != nil {
			b.Fatal(err)
		}
		o, err := codec.Unmarshal(m.Data())
		if err != nil || o.ID != i {
			b.Fatalf("value %d (%v) when %d was due", o.ID, err, i)
		}
	}
}

// BenchmarkDurableRead reads b.N stored values through a durable position,
// each handled by an empty handler: impl=natsbridge acknowledges each
// value once its loop body returned (All), impl=acks-on-read once it is
// read, before its handler runs (Next, then Done at once: what a watcher
// did before acknowledgements waited for the handler), and
// impl=jetstream-ackall is a bare consumer that acknowledges (AckAll) the
// last handled value every 256 values and at the end; impl=jetstream-pinned
// is that consumer pinned to its reader in a priority group, as a durable
// watcher's is (the server then adds the pin's id to every message it
// delivers): what the turn costs the server and the client, herald aside.
// The cpu metrics are the processor time per value (see cpuMeter): on one
// server, of the process, server and clients together.
func BenchmarkDurableRead(b *testing.B) {
	envs := benchEnvs(b)
	for _, server := range []string{"single", "cluster"} {
		env := envs[server]
		for _, impl := range []string{"natsbridge", "acks-on-read", "jetstream-ackall", "jetstream-pinned"} {
			b.Run("server="+server+"/impl="+impl, func(b *testing.B) { benchDurableRead(b, env, impl) })
		}
	}
}

func benchDurableRead(b *testing.B, env benchEnv, impl string) {
	ctx := context.Background()
	topic := benchTopic[Order](b, env)
	p := publisher(b, topic, natsbridge.PublisherOptions{})
	for i := range b.N {
		if err := p.Publish(ctx, Order{ID: i, Item: "book"}); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	meter := startMeter(env.cluster)
	switch impl {
	case "jetstream-ackall":
		bareDurableRead(b, env, topic.Stream(), false)
	case "jetstream-pinned":
		bareDurableRead(b, env, topic.Stream(), true)
	case "acks-on-read":
		w, err := topic.Watch(ctx, natsbridge.WatchOptions{From: 1, Durable: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		for i := range b.N {
			o, err := w.Next(ctx)
			if err != nil || o.ID != i {
				b.Fatalf("value %d (%v) when %d was due", o.ID, err, i)
			}
			w.Done(w.Seq()) // before its handler: at most once
		}
		b.StopTimer()
		if err := w.Shutdown(ctx); err != nil {
			b.Fatal(err)
		}
	default:
		w, err := topic.Watch(ctx, natsbridge.WatchOptions{From: 1, Durable: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		next := 0
		for o := range w.All() {
			if o.ID != next {
				b.Fatalf("value %d when %d was due", o.ID, next)
			}
			if next++; next == b.N {
				break
			}
		}
		b.StopTimer()
		if err := w.Shutdown(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	meter.report(b, b.N)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "values/s")
}

// bareDurableRead reads b.N values through a durable AckAll consumer,
// pinned to its reader in a priority group if pinned, and acknowledges the
// last value handled every 256 values and at the end. Its pull requests
// are a durable watcher's with the default options: as many messages,
// the same expiry (half the takeover time) and so the same heartbeat.
func bareDurableRead(b *testing.B, env benchEnv, stream string, pinned bool) {
	ctx := context.Background()
	codec := natsbridge.JSON[Order]()
	s, err := env.js.Stream(ctx, stream)
	if err != nil {
		b.Fatal(err)
	}
	cfg := jetstream.ConsumerConfig{Durable: "bare", AckPolicy: jetstream.AckAllPolicy, AckWait: time.Hour, MaxAckPending: -1}
	opts := []jetstream.PullMessagesOpt{jetstream.PullMaxMessages(natsbridge.DefaultReadAhead), jetstream.PullExpiry(natsbridge.DefaultTakeover / 2)}
	if pinned {
		cfg.PriorityPolicy, cfg.PriorityGroups, cfg.PinnedTTL = jetstream.PriorityPolicyPinned, []string{"bench"}, natsbridge.DefaultTakeover
		opts = append(opts, jetstream.PullPriorityGroup("bench"))
	}
	c, err := s.CreateConsumer(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	it, err := c.Messages(opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer it.Stop()
	for i := range b.N {
		m, err := nextMessage(it)
		if err != nil {
			b.Fatal(err)
		}
		o, err := codec.Unmarshal(m.Data())
		if err != nil || o.ID != i {
			b.Fatalf("value %d (%v) when %d was due", o.ID, err, i)
		}
		if i%256 == 255 || i == b.N-1 { // the handler returned: acknowledge the batch
			if i == b.N-1 {
				err = m.DoubleAck(ctx)
			} else {
				err = m.Ack()
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// nextMessage is it.Next as an application reading a stream uses it: a
// heartbeat missed (the server slow to answer, a new consumer's leader not
// yet elected) is reported, and the iterator pulls again by itself.
func nextMessage(it jetstream.MessagesContext) (jetstream.Msg, error) {
	for {
		m, err := it.Next()
		if !errors.Is(err, jetstream.ErrNoHeartbeat) {
			return m, err
		}
	}
}

// BenchmarkFailover publishes without pause to a stream replicated on three
// nats-server processes and kills its leader (SIGKILL) once the publisher
// is at full speed: elect-ms is how long the cluster took to elect a new
// leader, resume-ms how long after the election the publisher confirmed
// values again, full-ms how long after the election it confirmed them at
// least at 80% of its rate before the kill (both over 100ms windows), and
// values/s that rate. One op is one kill; run it with -benchtime 1x.
func BenchmarkFailover(b *testing.B) {
	for range b.N {
		b.StopTimer()
		c := natstest.StartCluster(b, 3, natstest.Options{})
		_, js := dial(b, c.URL())
		_, admin := dial(b, c.URL())
		env := benchEnv{js: js, replicas: 3, cluster: c}
		topic := benchTopic[Order](b, env)
		p := publisher(b, topic, natsbridge.PublisherOptions{})
		pr := watchProgress(p)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ctx.Err() == nil; i++ {
				_ = p.Publish(ctx, Order{ID: i, Item: "book"})
			}
		}()
		time.Sleep(2 * time.Second) // at full speed for a while: the load itself, not a synchronisation
		b.StartTimer()
		old := c.StreamLeader(admin, topic.Stream())
		killed := time.Now()
		old.Kill()
		c.WaitStreamLeader(admin, topic.Stream(), old)
		elected := time.Now()
		b.StopTimer()
		time.Sleep(3 * time.Second) // the recovery to measure
		cancel()
		<-done
		_ = p.Shutdown(context.Background())
		pr.end()
		resume, full := pr.recoveryTo(killed, elected, 0.8)
		base := pr.rate(killed, 500*time.Millisecond)
		b.ReportMetric(float64(elected.Sub(killed).Milliseconds()), "elect-ms")
		b.ReportMetric(float64(resume.Milliseconds()), "resume-ms")
		b.ReportMetric(float64(full.Milliseconds()), "full-ms")
		b.ReportMetric(base, "values/s")
	}
}

// stamped is a value that carries when it was published.
type stamped struct {
	N  int   `json:"n"`
	At int64 `json:"at"` // UnixNano
}

// sampler keeps at most cap latencies of one reader, evenly spaced.
type sampler struct {
	every int
	got   []time.Duration
}

func newSampler(n int) *sampler {
	const keep = 4096
	return &sampler{every: max(1, n/keep), got: make([]time.Duration, 0, keep+1)}
}

func (s *sampler) add(v stamped) {
	if v.N%s.every == 0 {
		s.got = append(s.got, time.Duration(time.Now().UnixNano()-v.At))
	}
}

// quantiles reports the p50 and p99 of every sampler's latencies.
func quantiles(b *testing.B, ss []*sampler) {
	var all []time.Duration
	for _, s := range ss {
		all = append(all, s.got...)
	}
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	at := func(q float64) float64 { return float64(all[int(q*float64(len(all)-1))].Microseconds()) }
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// BenchmarkEndToEnd publishes values as fast as the publisher's window
// allows and times them until every watcher has read every one, in order:
// each through its own consumer (Watch), or all through one consumer
// feeding local broadcast watchers (Mirror). values/s counts published
// values; the latencies are those of values under that load (publish call
// to read), queueing included. The anchor is one bare jetstream consumer
// reading what a bare PublishAsync loop publishes.
func BenchmarkEndToEnd(b *testing.B) {
	env := newBenchEnv(b)
	for _, mode := range []string{"Watch", "Mirror"} {
		for _, n := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("via=%s/watchers=%d", mode, n), func(b *testing.B) {
				endToEnd(b, env, mode, n)
			})
		}
	}
	b.Run("via=jetstream/watchers=1", func(b *testing.B) { bareEndToEnd(b, env) })
}

// readers starts n readers of b.N values each, through Watch or Mirror, and
// returns their samplers and a channel closed once all have read b.N.
func readers(b *testing.B, topic *natsbridge.Topic[stamped], mode string, n int) ([]*sampler, <-chan struct{}) {
	ctx := context.Background()
	var seqs []func(func(stamped) bool)
	switch mode {
	case "Watch":
		for range n {
			w, err := topic.Watch(ctx, natsbridge.WatchOptions{Full: broadcast.Block})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(w.Stop)
			seqs = append(seqs, w.All())
		}
	case "Mirror":
		m, err := topic.Mirror(ctx, broadcast.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = m.Shutdown(ctx) })
		for range n {
			w, err := m.WatchWith(broadcast.WatchOptions{Full: broadcast.Block})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(w.Stop)
			seqs = append(seqs, w.All())
		}
	}
	var wg sync.WaitGroup
	samplers := make([]*sampler, n)
	for i, all := range seqs {
		s := newSampler(b.N)
		samplers[i] = s
		wg.Go(func() {
			next := 0
			for v := range all {
				if v.N != next {
					b.Errorf("reader %d: value %d when %d was due", i, v.N, next)
					return
				}
				s.add(v)
				if next++; next == b.N {
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return samplers, done
}

func endToEnd(b *testing.B, env benchEnv, mode string, n int) {
	ctx := context.Background()
	topic := benchTopic[stamped](b, env)
	samplers, done := readers(b, topic, mode, n)
	p := publisher(b, topic, natsbridge.PublisherOptions{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := p.Publish(ctx, stamped{N: i, At: time.Now().UnixNano()}); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	<-done
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "values/s")
	quantiles(b, samplers)
}

func bareEndToEnd(b *testing.B, env benchEnv) {
	ctx := context.Background()
	topic := benchTopic[stamped](b, env)
	st, err := env.js.Stream(ctx, topic.Stream())
	if err != nil {
		b.Fatal(err)
	}
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		b.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		b.Fatal(err)
	}
	codec := natsbridge.JSON[stamped]()
	s := newSampler(b.N)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < b.N; i++ {
			m, err := nextMessage(it)
			if err != nil {
				b.Error(err)
				return
			}
			v, err := codec.Unmarshal(m.Data())
			if err != nil || v.N != i {
				b.Errorf("value %d (%v) when %d was due", v.N, err, i)
				return
			}
			s.add(v)
		}
	}()
	b.Cleanup(it.Stop)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		data, err := codec.Marshal(stamped{N: i, At: time.Now().UnixNano()})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := env.js.PublishAsync(topic.Name(), data, jetstream.WithStallWait(time.Minute)); err != nil {
			b.Fatal(err)
		}
	}
	<-env.js.PublishAsyncComplete()
	<-done
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "values/s")
	quantiles(b, []*sampler{s})
}

// BenchmarkLatency publishes one value at a time and waits until every
// watcher has read it: the latency of a value through the server when
// nothing queues. The op is one value; p50/p99 are of the time until the
// last watcher read it.
func BenchmarkLatency(b *testing.B) {
	env := newBenchEnv(b)
	for _, mode := range []string{"Watch", "Mirror"} {
		for _, n := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("via=%s/watchers=%d", mode, n), func(b *testing.B) {
				latency(b, env, mode, n)
			})
		}
	}
}

func latency(b *testing.B, env benchEnv, mode string, n int) {
	ctx := context.Background()
	topic := benchTopic[stamped](b, env)
	var seqs []func(func(stamped) bool)
	switch mode {
	case "Watch":
		for range n {
			w, err := topic.Watch(ctx, natsbridge.WatchOptions{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(w.Stop)
			seqs = append(seqs, w.All())
		}
	case "Mirror":
		m, err := topic.Mirror(ctx, broadcast.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = m.Shutdown(ctx) })
		for range n {
			w, err := m.Watch()
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(w.Stop)
			seqs = append(seqs, w.All())
		}
	}
	var read atomic.Int64
	arrived := make(chan struct{}, 1)
	var wg sync.WaitGroup
	for _, all := range seqs {
		wg.Go(func() {
			got := 0
			for range all {
				if read.Add(1)%int64(n) == 0 {
					arrived <- struct{}{}
				}
				if got++; got == b.N {
					return
				}
			}
		})
	}
	b.Cleanup(wg.Wait)
	p := publisher(b, topic, natsbridge.PublisherOptions{})
	b.Cleanup(func() { _ = p.Shutdown(ctx) })
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if err := p.Publish(ctx, stamped{N: i}); err != nil {
			b.Fatal(err)
		}
		<-arrived
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[(len(lat)-1)*99/100].Microseconds()), "p99-µs")
}
