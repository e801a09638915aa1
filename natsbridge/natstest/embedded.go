package natstest

import (
	"github.com/heraldgo/herald/natsbridge/embedded"
)

// Embedded starts a server with JetStream inside the test's process,
// storing in a directory of the test's unless o.Dir says otherwise, and
// shuts it down when the test ends. It is the fastest real server: connect
// to it with Server.Connect (no socket at all), or set o.Listen to reach
// it over loopback TCP (through a Relay, say).
func Embedded(t T, o embedded.Options) *embedded.Server {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	s, err := embedded.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}
