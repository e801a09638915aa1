package natsbridge

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The calls NewTopic, Watch and Mirror make to the server with their
// caller's ctx.

const (
	// attemptTimeout bounds one attempt of such a call. In a cluster a
	// request may go unanswered for good: sent to a stream leader that
	// died before it answered, or creating a consumer the server placed
	// on a node that died a moment ago (it takes a node killed without a
	// word for alive for a while), or lost with a connection cut after
	// it was written. Nobody answers it later, however long the caller's
	// ctx; the next attempt, placed again, is answered.
	attemptTimeout = 5 * time.Second
	// attemptsWithoutDeadline is how many attempts a call makes whose ctx
	// has no deadline: as nats.go bounds a request without one (5 s), so
	// that a server out of reach fails the call rather than stall it.
	attemptsWithoutDeadline = 3
)

// errAttemptTimedOut is the cause of an attempt's ctx that ended on its
// own bound, not its caller's: another attempt follows.
var errAttemptTimedOut = errors.New("natsbridge: the attempt timed out")

// answered calls fn until it returns something other than the timeout of
// its own attempt: each attempt bounded by attemptTimeout within ctx, a
// back-off between them, as long as ctx lasts (attemptsWithoutDeadline
// attempts in all for a ctx without a deadline). fn must be safe to call
// again after an attempt that timed out: it may have taken effect on the
// server, or may yet (a request held in a connection's buffer while it
// reconnects).
func answered(ctx context.Context, fn func(context.Context) error) error {
	_, bounded := ctx.Deadline()
	var b backoff
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeoutCause(ctx, attemptTimeout, errAttemptTimedOut)
		err := fn(actx)
		unanswered := errors.Is(err, context.DeadlineExceeded) && actx.Err() != nil && ctx.Err() == nil
		cancel()
		if !unanswered || (!bounded && attempt >= attemptsWithoutDeadline) {
			return err
		}
		if !b.wait(ctx) {
			return fmt.Errorf("%w (the last attempt: %w)", ctx.Err(), err)
		}
	}
}

// backoff is the wait between two attempts of a call to the server:
// 50 ms, doubling up to 2 s. Its zero value is ready to use.
type backoff struct{ next time.Duration }

// wait waits out the next pause, and reports false if ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	if b.next == 0 {
		b.next = 50 * time.Millisecond
	}
	t := time.NewTimer(b.next)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return false
	}
	b.next = min(2*b.next, 2*time.Second)
	return true
}
