package watermillbench_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/broadcast"
	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// Order is the small value both sides publish, encoded as JSON.
type Order struct {
	ID   int    `json:"id"`
	Item string `json:"item"`
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var topics atomic.Int64

// env is a server in the process, reached over loopback TCP, and a
// natsbridge connection to it.
type env struct {
	url string
	js  jetstream.JetStream
}

func newEnv(b *testing.B) env {
	s, err := embedded.Start(embedded.Options{Dir: b.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Shutdown)
	nc, err := nats.Connect(s.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	return env{url: s.URL(), js: js}
}

// topic makes the stream both sides use (one subject, file storage), and
// deletes it when b ends.
func (e env) topic(b *testing.B) *natsbridge.Topic[Order] {
	name := "wmbench" + strconv.FormatInt(topics.Add(1), 10)
	t, err := natsbridge.NewTopic(context.Background(), e.js, name, natsbridge.JSON[Order](), natsbridge.TopicOptions{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = t.Shutdown(context.Background())
		_ = e.js.DeleteStream(context.Background(), t.Stream())
	})
	return t
}

func (e env) wmPublisher(b *testing.B) *wmnats.Publisher {
	p, err := wmnats.NewPublisher(wmnats.PublisherConfig{
		URL:       e.url,
		JetStream: wmnats.JetStreamConfig{TrackMsgId: true}, // a message id per value, as natsbridge sets
	}, watermill.NopLogger{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	return p
}

// BenchmarkPublish publishes small values, every ack awaited: natsbridge's
// Publisher (a window of acks in flight) against watermill-nats' JetStream
// publisher (one ack at a time, its only mode).
func BenchmarkPublish(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	b.Run("impl=natsbridge", func(b *testing.B) {
		topic := e.topic(b)
		p, err := topic.Publisher(natsbridge.PublisherOptions{})
		if err != nil {
			b.Fatal(err)
		}
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
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "values/s")
	})
	b.Run("impl=watermill-nats", func(b *testing.B) {
		topic := e.topic(b)
		p := e.wmPublisher(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			data, err := json.Marshal(Order{ID: i, Item: "book"})
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Publish(topic.Name(), message.NewMessage(watermill.NewUUID(), data)); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "values/s")
	})
}

// BenchmarkEndToEnd publishes values and times them until one subscriber
// has read every one: a natsbridge Watcher (Block) against a watermill-nats
// JetStream subscriber (which acks each message; watermill has no other
// way to read a stream).
func BenchmarkEndToEnd(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	b.Run("impl=natsbridge", func(b *testing.B) {
		topic := e.topic(b)
		w, err := topic.Watch(ctx, natsbridge.WatchOptions{Full: broadcast.Block})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(w.Stop)
		done := make(chan struct{})
		go func() {
			defer close(done)
			next := 0
			for o := range w.All() {
				if o.ID != next {
					b.Errorf("value %d when %d was due", o.ID, next)
					return
				}
				if next++; next == b.N {
					return
				}
			}
		}()
		p, err := topic.Publisher(natsbridge.PublisherOptions{})
		if err != nil {
			b.Fatal(err)
		}
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
		<-done
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "values/s")
	})
	b.Run("impl=watermill-nats", func(b *testing.B) {
		topic := e.topic(b)
		sub, err := wmnats.NewSubscriber(wmnats.SubscriberConfig{
			URL:              e.url,
			SubscribersCount: 1,
			AckWaitTimeout:   30 * time.Second,
			CloseTimeout:     10 * time.Second,
			SubscribeTimeout: 10 * time.Second,
			JetStream: wmnats.JetStreamConfig{
				AckAsync:         true,
				SubscribeOptions: []nats.SubOpt{nats.DeliverNew(), nats.AckExplicit()},
			},
		}, watermill.NopLogger{})
		if err != nil {
			b.Fatal(err)
		}
		subCtx, cancel := context.WithCancel(ctx)
		msgs, err := sub.Subscribe(subCtx, topic.Name())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			cancel()
			_ = sub.Close()
		})
		done := make(chan struct{})
		go func() {
			defer close(done)
			next := 0
			for m := range msgs {
				var o Order
				if err := json.Unmarshal(m.Payload, &o); err != nil || o.ID != next {
					b.Errorf("value %d (%v) when %d was due", o.ID, err, next)
					return
				}
				m.Ack()
				if next++; next == b.N {
					return
				}
			}
		}()
		p := e.wmPublisher(b)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			data, err := json.Marshal(Order{ID: i, Item: "book"})
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Publish(topic.Name(), message.NewMessage(watermill.NewUUID(), data)); err != nil {
				b.Fatal(err)
			}
		}
		<-done
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "values/s")
	})
}
