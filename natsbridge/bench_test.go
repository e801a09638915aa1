package natsbridge_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// The benchmarks run against a real server in the process, reached over
// loopback TCP, storing in a temporary directory (file storage, the
// default): the engine in these numbers is the one users run. Each
// sub-benchmark has a stream of its own, deleted when it ends.
//
//	go test -run '^$' -bench Publish -benchtime 100000x -count 6 . > pub.txt
//	benchstat -row /storage -col /impl pub.txt
//	go test -run '^$' -bench EndToEnd -benchtime 20000x -count 6 . > e2e.txt
//	go test -run '^$' -bench Latency -benchtime 5000x -count 6 . > lat.txt
//	benchstat -row /watchers -col /via e2e.txt lat.txt
//
// Publish and EndToEnd time every value until it is acknowledged (and, for
// EndToEnd, read by every watcher): the loop runs b.N times and the wait
// for the acks, which is part of the work, comes after it, inside the
// timed region. That is why they count with b.N rather than b.Loop.

var benchTopics atomic.Int64

// benchEnv is a server and a TCP connection shared by one benchmark's
// sub-benchmarks.
type benchEnv struct {
	srv *embedded.Server
	js  jetstream.JetStream
}

func newBenchEnv(b *testing.B) benchEnv {
	s := startServer(b, embedded.Options{Listen: "127.0.0.1:0"})
	_, js := dial(b, s.URL())
	return benchEnv{srv: s, js: js}
}

// benchTopic returns a fresh topic on a file-backed stream, deleted when b
// ends.
func benchTopic[T any](b *testing.B, js jetstream.JetStream) *natsbridge.Topic[T] {
	return benchTopicStored[T](b, js, jetstream.FileStorage)
}

func benchTopicStored[T any](b *testing.B, js jetstream.JetStream, storage jetstream.StorageType) *natsbridge.Topic[T] {
	name := "bench" + strconv.FormatInt(benchTopics.Add(1), 10)
	t := newTopicOf(b, js, name, natsbridge.JSON[T](), natsbridge.TopicOptions{Storage: storage})
	b.Cleanup(func() { _ = js.DeleteStream(context.Background(), t.Stream()) })
	return t
}

// BenchmarkPublish publishes small values and waits for every ack:
// natsbridge's Publisher against a bare jetstream PublishAsync loop with the
// same codec, with and without message ids (the Publisher sets one on every
// value, for retries; the stream's deduplication costs the server a
// little), on a file-backed stream (the default) and on a memory one (where
// the engine is faster, so the client's own costs weigh more).
func BenchmarkPublish(b *testing.B) {
	env := newBenchEnv(b)
	for _, storage := range []jetstream.StorageType{jetstream.FileStorage, jetstream.MemoryStorage} {
		b.Run("storage="+storage.String(), func(b *testing.B) { benchPublish(b, env, storage) })
	}
}

func benchPublish(b *testing.B, env benchEnv, storage jetstream.StorageType) {
	ctx := context.Background()
	codec := natsbridge.JSON[Order]()

	b.Run("impl=natsbridge", func(b *testing.B) {
		topic := benchTopicStored[Order](b, env.js, storage)
		p := topic.Publisher(natsbridge.PublisherOptions{})
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
	})

	// The bare loop lets PublishAsync wait as long as it takes when its
	// own limit of acks in flight (4000) is reached: with the default
	// stall wait (200ms) a loaded machine makes it fail.
	stall := jetstream.WithStallWait(time.Minute)
	bare := func(withID bool) func(b *testing.B) {
		return func(b *testing.B) {
			topic := benchTopicStored[Order](b, env.js, storage)
			subject := topic.Name()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				data, err := codec.Marshal(Order{ID: i, Item: "book"})
				if err != nil {
					b.Fatal(err)
				}
				if withID {
					_, err = env.js.PublishAsync(subject, data, stall, jetstream.WithMsgID(strconv.Itoa(i)))
				} else {
					_, err = env.js.PublishAsync(subject, data, stall)
				}
				if err != nil {
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
	}
	b.Run("impl=jetstream", bare(false))
	b.Run("impl=jetstream-msgid", bare(true))
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
	topic := benchTopic[stamped](b, env.js)
	samplers, done := readers(b, topic, mode, n)
	p := topic.Publisher(natsbridge.PublisherOptions{})
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
	topic := benchTopic[stamped](b, env.js)
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
			m, err := it.Next()
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
	topic := benchTopic[stamped](b, env.js)
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
	p := topic.Publisher(natsbridge.PublisherOptions{})
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
