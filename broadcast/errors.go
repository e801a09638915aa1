package broadcast

import (
	"errors"
	"fmt"
)

// ErrClosed is the error every call that meets a closed broadcaster or
// watcher wraps; the error returned says which call, why, and what to do.
// Watch, WatchWith, Publish and TryPublish return it once Shutdown has
// begun, and Watcher.Next once the watcher was stopped or its broadcaster
// shut down and every value queued for it has been read. Flush and
// Shutdown return it when a Shutdown whose context ended abandoned values
// queued before them (Stats.DroppedShutdown), and Flush once Shutdown has
// completed. Test for it with errors.Is.
var ErrClosed = errors.New("broadcast: closed")

// The errors wrapping ErrClosed, one per call and cause, made once so
// that returning one allocates nothing.
var (
	errWatchClosed       = closedError("Watch after Shutdown began: nothing more is published; watch a new Broadcaster")
	errWatchWithClosed   = closedError("WatchWith after Shutdown began: nothing more is published; watch a new Broadcaster")
	errPublishClosed     = closedError("Publish after Shutdown began: the value is not queued; publish to a new Broadcaster")
	errTryPublishClosed  = closedError("TryPublish after Shutdown began: the value is not queued; publish to a new Broadcaster")
	errNextClosed        = closedError("Watcher.Next: the watcher is stopped (Stop or Shutdown) and was read to the end; watch again to read on")
	errFlushShutDown     = closedError("Flush after Shutdown returned: everything queued was delivered or counted in Stats")
	errFlushAbandoned    = closedError("Flush: a Shutdown gave up on values queued before it (its context ended); see Stats.DroppedShutdown")
	errShutdownAbandoned = closedError("Shutdown: a Shutdown gave up on queued values (its context ended); see Stats.DroppedShutdown")
)

func closedError(msg string) error { return fmt.Errorf("broadcast: %s: %w", msg, ErrClosed) }
