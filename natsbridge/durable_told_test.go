package natsbridge_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestDurableToldWronglyNotServedReadsOn: a durable reader whose server
// answers the consumer info it asks at its first message wrongly (without
// the priority group; nobody pinned; another reader pinned) drops that
// message and what came with it under its pin; with nothing published
// after, its idle check finds the server serving that very pin, puts the
// consumer back, and reads the whole burst within the takeover time
// (it stood still until another value came, which could be never: the
// burst's acknowledgements wait for the ack wait, an hour).
func TestDurableToldWronglyNotServedReadsOn(t *testing.T) {
	for _, mode := range []string{"nogroup", "emptypin", "otherpin"} {
		t.Run(mode, func(t *testing.T) { toldNotServed(t, mode) })
	}
}

func toldNotServed(t *testing.T, mode string) {
	const n, takeover = 200, 2 * time.Second
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	ctx := testCtx(t)
	lie := &infoLie{}
	topic := newTopic(t, lyingJS{js, lie}, "told."+mode, natsbridge.TopicOptions{})
	w := watch(t, topic, natsbridge.WatchOptions{Durable: "d", Takeover: takeover})
	var read atomic.Int64
	rctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			d, err := w.Receive(rctx)
			if err != nil {
				return
			}
			read.Add(1)
			w.Done(d.Seq)
		}
	}()
	defer func() { cancel(); w.Stop(); <-stopped }()
	lie.arm(mode, 1)
	publishAll(t, topic, 1, n)
	published := time.Now()
	eventuallyWithin(t, 2*takeover, "the burst read", func() bool { return read.Load() >= n })
	if lie.told() != 1 {
		t.Fatalf("the server lied %d times, want once", lie.told())
	}
	logFault(t, "told %s: the burst of %d read %v after it was published", mode, n, time.Since(published).Round(time.Millisecond))
}

// infoLie makes the consumer info answers of a lying JetStream wrong, n
// times from when it is armed: "nogroup" drops the priority groups (as a
// node of a cluster without the consumer's state would answer),
// "emptypin" says no reader is pinned (as a new consumer leader that
// forgot the pin would), "otherpin" names a pin that is no reader's.
// It counts the answers it changed.
type infoLie struct {
	left atomic.Int64
	mu   sync.Mutex // guards mode, lies
	mode string
	lies int
}

func (l *infoLie) arm(mode string, n int) {
	l.mu.Lock()
	l.mode = mode
	l.mu.Unlock()
	l.left.Store(int64(n))
}

func (l *infoLie) apply(info *jetstream.ConsumerInfo) *jetstream.ConsumerInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.left.Add(-1) < 0 {
		l.left.Store(0)
		return info
	}
	l.lies++
	c := *info
	switch l.mode {
	case "nogroup":
		c.PriorityGroups = nil
	case "emptypin":
		c.PriorityGroups = []jetstream.PriorityGroupState{{Group: "herald"}}
	case "otherpin":
		c.PriorityGroups = []jetstream.PriorityGroupState{{Group: "herald", PinnedClientID: "no-reader-s-pin", PinnedTS: time.Now()}}
	}
	return &c
}

func (l *infoLie) told() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lies
}

type lyingJS struct {
	jetstream.JetStream
	lie *infoLie
}

func (j lyingJS) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	s, err := j.JetStream.Stream(ctx, name)
	if err != nil {
		return s, err
	}
	return lyingStream{s, j.lie}, nil
}

func (j lyingJS) CreateStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	s, err := j.JetStream.CreateStream(ctx, cfg)
	if err != nil {
		return s, err
	}
	return lyingStream{s, j.lie}, nil
}

type lyingStream struct {
	jetstream.Stream
	lie *infoLie
}

func (s lyingStream) Consumer(ctx context.Context, name string) (jetstream.Consumer, error) {
	c, err := s.Stream.Consumer(ctx, name)
	if err != nil {
		return c, err
	}
	return lyingConsumer{c, s.lie}, nil
}

func (s lyingStream) CreateConsumer(ctx context.Context, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	c, err := s.Stream.CreateConsumer(ctx, cfg)
	if err != nil {
		return c, err
	}
	return lyingConsumer{c, s.lie}, nil
}

type lyingConsumer struct {
	jetstream.Consumer
	lie *infoLie
}

func (c lyingConsumer) Info(ctx context.Context) (*jetstream.ConsumerInfo, error) {
	info, err := c.Consumer.Info(ctx)
	if err != nil {
		return info, err
	}
	return c.lie.apply(info), nil
}
