// Package natstest runs real NATS servers for tests: nats-server processes,
// alone or as a JetStream cluster on loopback, that a test kills with
// SIGKILL and starts again, and a TCP relay between clients and servers
// that cuts or silences connections and counts what clients publish.
//
// No mock stands in for the server: the binary is nats-server itself, built
// once (go install) at the version of github.com/nats-io/nats-server/v2 the
// test binary links, and kept in the user's cache directory for later runs.
// Building it takes about half a minute on two cores the first time; the
// environment variable HERALD_NATS_SERVER names a binary to use instead.
//
// # Usage
//
//	c := natstest.StartCluster(t, 3, natstest.Options{})
//	nc, _ := nats.Connect(c.URL(), nats.MaxReconnects(-1))
//	js, _ := jetstream.New(nc)
//	… create a stream with Replicas: 3 …
//	old := c.StreamLeader(js, "ORDERS")
//	old.Kill()                               // SIGKILL, mid-stream
//	c.WaitStreamLeader(js, "ORDERS", old)    // a new leader is elected
//	old.Restart()                            // same ports, same store
//
//	r := natstest.NewRelay(t, c.URLs()...)   // connect through r.URL()
//	r.Cut()                                  // every connection reset
//	n := r.Published("orders")               // publishes on the wire so far
//
// Every server, relay and goroutine is stopped by t.Cleanup, so tests stay
// clean under goleak. Tests that use this package need nats-server's
// module in their build list (natsbridge's tests have it) and, the first
// time, the Go module proxy.
package natstest
