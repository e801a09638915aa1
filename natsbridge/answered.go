package natsbridge

import (
	"context"
	"errors"
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

// answered calls fn until it returns something other than the timeout of
// its own attempt: each attempt bounded by attemptTimeout within ctx, a
// back-off between them (50 ms doubling to 2 s), as long as ctx lasts
// (attemptsWithoutDeadline attempts for a ctx without a deadline). fn must
// be safe to call again after an attempt that timed out: it may have
// taken effect on the server.
func answered(ctx context.Context, fn func(context.Context) error) error {
	_, bounded := ctx.Deadline()
	wait := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := fn(actx)
		unanswered := errors.Is(err, context.DeadlineExceeded) && actx.Err() != nil && ctx.Err() == nil
		cancel()
		if !unanswered || (!bounded && attempt >= attemptsWithoutDeadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
		wait = min(2*wait, 2*time.Second)
	}
}
