package natsbridge_test

import (
	"context"
	"testing"

	"github.com/heraldgo/herald/natsbridge"
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// TestHostile2PublishCancelledCtxRefused: the doc says Publish returns
// ctx.Err() if ctx ends first; a ctx cancelled before the call has ended
// first, so no such Publish is accepted.
func TestHostile2PublishCancelledCtxRefused(t *testing.T) {
	s := startServer(t, embedded.Options{})
	_, js := connect(t, s)
	topic := newTopic(t, js, "h2cancel2", natsbridge.TopicOptions{})
	p := publisher(t, topic, natsbridge.PublisherOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	accepted := 0
	for i := range 100 {
		if err := p.Publish(ctx, Order{ID: i}); err == nil {
			accepted++
		}
	}
	if accepted > 0 {
		t.Errorf("%d of 100 Publish calls with an already-cancelled ctx returned nil (and were sent)", accepted)
	}
	if err := p.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}
