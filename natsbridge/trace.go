package natsbridge

import (
	"context"
	"net/textproto"
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
)

// Trace context across the stream: a Publisher writes the trace context of Publish's ctx into the headers of
// the value's message, with OpenTelemetry's global propagator; a watcher's
// feed keeps the headers of a message that carries one with its value, and
// Watcher.Context extracts it, with the same propagator, for the reader.
// Only the propagator is used: natsbridge starts no span of its own.

// headerCarrier is a message's headers as a propagator's carrier. Set
// writes a key as the propagator gives it (W3C's "traceparent", in lower
// case, as other NATS clients write it); Get also finds a key written in
// canonical form ("Traceparent": what propagation.HeaderCarrier writes,
// used on nats.Header by some producers).
type headerCarrier nats.Header

func (c headerCarrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return v[0]
	}
	if v := c[textproto.CanonicalMIMEHeaderKey(key)]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c headerCarrier) Set(key, value string) { c[key] = []string{value} }

func (c headerCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// injectTrace writes the trace context of ctx into h, an empty map, with
// the global propagator, and returns the size of what it wrote on the
// wire. With no propagator set (the default, a no-op), or no trace context
// in ctx, it writes nothing, returns 0 and allocates nothing: the
// propagator is asked to write into the message's own map, and writes
// nothing.
func injectTrace(ctx context.Context, h nats.Header) int {
	otel.GetTextMapPropagator().Inject(ctx, headerCarrier(h))
	if len(h) == 0 {
		return 0
	}
	return fieldsSize(h)
}

// fieldsSize returns the size of h's fields on the wire ("key: value\r\n"
// each), without the status line and the blank line that end the headers.
func fieldsSize(h nats.Header) int {
	n := 0
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(": ") + len(v) + len("\r\n")
		}
	}
	return n
}

// traceHeaders returns h if it carries a header that is neither NATS's
// nor JetStream's (theirs begin with "Nats-"): a trace context, as a
// propagator wrote it. Otherwise it returns nil, so that a queued value
// keeps no headers it has no use for. It allocates nothing.
func traceHeaders(h nats.Header) nats.Header {
	for k := range h {
		if !strings.HasPrefix(k, "Nats-") {
			return h
		}
	}
	return nil
}

// extractTrace returns parent with what the global propagator extracts
// from h: the producer's span context, as a remote one.
func extractTrace(parent context.Context, h nats.Header) context.Context {
	return otel.GetTextMapPropagator().Extract(parent, headerCarrier(h))
}
