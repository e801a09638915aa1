package handle

import "context"

// valueCtx is the context a worker hands its handler: the Pool's, plus
// what Seq and Attempt read of the value in hand. A worker makes one, and
// sets it for each value: nothing is allocated per value.
type valueCtx struct {
	context.Context
	seq     uint64
	attempt int
}

// valueKey is the key under which a valueCtx finds itself.
type valueKey struct{}

func (c *valueCtx) Value(key any) any {
	if key == (valueKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// Seq returns, in a handler's ctx, the sequence of the value being
// handled in its source (a natsbridge watcher's stream sequence: a key for
// idempotent handling), or 0 if its source gives none. It is valid while
// the handler runs: a goroutine the handler starts must copy it first. In
// any other ctx it returns 0.
func Seq(ctx context.Context) uint64 {
	if c, ok := ctx.Value(valueKey{}).(*valueCtx); ok {
		return c.seq
	}
	return 0
}

// Attempt returns, in a handler's ctx, which attempt at the value this
// is: 1 the first time, counting the attempts before a crash when the
// source counts them (see Delivery.Attempt). It is valid while the handler
// runs; in any other ctx it returns 0.
func Attempt(ctx context.Context) int {
	if c, ok := ctx.Value(valueKey{}).(*valueCtx); ok {
		return c.attempt
	}
	return 0
}
