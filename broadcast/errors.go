package broadcast

import "errors"

// ErrClosed is returned by Watch, WatchWith, WatchWithPrefix, Publish and
// TryPublish once Shutdown has begun, and by Watcher.Next once the watcher
// was stopped or its broadcaster shut down and every value queued for it has
// been read. Test for it with errors.Is.
var ErrClosed = errors.New("broadcast: closed")
