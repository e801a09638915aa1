package broadcast

import "errors"

// ErrClosed is returned by Watch, WatchWith, WatchWithPrefix, Publish and
// TryPublish once Shutdown has begun, and by Watcher.Next once the watcher
// was stopped or its broadcaster shut down and every value queued for it has
// been read. Flush and Shutdown return it when a Shutdown whose context
// ended abandoned values queued before them (Stats.DroppedShutdown), and
// Flush once Shutdown has completed. Test for it with errors.Is.
var ErrClosed = errors.New("broadcast: closed")
