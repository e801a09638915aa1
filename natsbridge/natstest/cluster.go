package natstest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Cluster is a JetStream cluster of nats-server processes on loopback,
// each a Server of its own that a test kills and restarts. Clients are
// told only the URLs they are given (the servers advertise no others), so
// that a relay in front of the cluster sees every connection. It is safe
// for concurrent use. Its zero value is not usable: get one from
// StartCluster.
type Cluster struct {
	t       T
	opts    Options
	Servers []*Server
}

// StartCluster starts n nats-server processes (n ≥ 1) as one JetStream
// cluster and returns once JetStream answers (it has elected a meta
// leader). Every process is stopped when the test ends.
func StartCluster(t T, n int, o Options) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("natstest: a cluster of %d servers", n)
	}
	routes := make([]int, n)
	for i := range routes {
		routes[i] = freePort(t)
	}
	var urls []string
	for _, p := range routes {
		urls = append(urls, fmt.Sprintf("%q", "nats://127.0.0.1:"+strconv.Itoa(p)))
	}
	c := &Cluster{t: t, opts: o}
	for i := range n {
		block := fmt.Sprintf("cluster {\n  name: \"herald\"\n  listen: \"127.0.0.1:%d\"\n  no_advertise: true\n  routes: [%s]\n}\n",
			routes[i], strings.Join(urls, ", "))
		c.Servers = append(c.Servers, newServer(t, "n"+strconv.Itoa(i+1), o, block))
	}
	for _, s := range c.Servers {
		s.Restart()
	}
	c.WaitJetStream()
	return c
}

// URL returns the client URLs of every server, comma-separated, as
// nats.Connect takes them.
func (c *Cluster) URL() string {
	urls := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		urls[i] = s.URL()
	}
	return strings.Join(urls, ",")
}

// URLs returns each server's client URL.
func (c *Cluster) URLs() []string {
	urls := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		urls[i] = s.URL()
	}
	return urls
}

// WaitJetStream returns once JetStream answers on a running server: the
// cluster has a meta leader. It fails the test after Options.ReadyTimeout.
func (c *Cluster) WaitJetStream() {
	c.t.Helper()
	for _, s := range c.Servers {
		if s.Running() {
			waitJetStream(c.t, s.URL(), c.opts.readyTimeout(), c.logs)
			return
		}
	}
	c.t.Fatal("natstest: no server of the cluster is running")
}

// Server returns the server named name, or nil.
func (c *Cluster) Server(name string) *Server {
	for _, s := range c.Servers {
		if s.name == name {
			return s
		}
	}
	return nil
}

// StreamLeader returns the server that leads stream now, asking through
// js. It fails the test if the stream has no leader within
// Options.ReadyTimeout.
func (c *Cluster) StreamLeader(js jetstream.JetStream, stream string) *Server {
	c.t.Helper()
	return c.waitLeader(js, stream, nil)
}

// WaitStreamLeader returns the server that leads stream once a leader
// other than not is elected (not may be nil: any leader). It fails the test
// after Options.ReadyTimeout.
func (c *Cluster) WaitStreamLeader(js jetstream.JetStream, stream string, not *Server) *Server {
	c.t.Helper()
	return c.waitLeader(js, stream, not)
}

// ConsumerLeader returns the server that leads the consumer of stream
// now, asking through js. It fails the test if the consumer has no leader
// within Options.ReadyTimeout. A consumer's leader may differ from its
// stream's.
func (c *Cluster) ConsumerLeader(js jetstream.JetStream, stream, consumer string) *Server {
	c.t.Helper()
	return c.waitLeaderOf(func() (*Server, error) { return c.consumerLeader(js, stream, consumer) }, "consumer "+consumer, nil)
}

// WaitConsumerLeader returns the server that leads the consumer of stream
// once a leader other than not is elected (not may be nil: any leader).
// It fails the test after Options.ReadyTimeout.
func (c *Cluster) WaitConsumerLeader(js jetstream.JetStream, stream, consumer string, not *Server) *Server {
	c.t.Helper()
	return c.waitLeaderOf(func() (*Server, error) { return c.consumerLeader(js, stream, consumer) }, "consumer "+consumer, not)
}

func (c *Cluster) consumerLeader(js jetstream.JetStream, stream, consumer string) (*Server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	cons, err := js.Consumer(ctx, stream, consumer)
	if err != nil {
		return nil, err
	}
	return c.running(cons.CachedInfo().Cluster)
}

func (c *Cluster) waitLeader(js jetstream.JetStream, stream string, not *Server) *Server {
	c.t.Helper()
	return c.waitLeaderOf(func() (*Server, error) { return c.leader(js, stream) }, "stream "+stream, not)
}

// waitLeaderOf polls leader until it returns a server other than not.
func (c *Cluster) waitLeaderOf(leader func() (*Server, error), what string, not *Server) *Server {
	c.t.Helper()
	deadline := time.Now().Add(c.opts.readyTimeout())
	var last error
	for time.Now().Before(deadline) {
		if s, err := leader(); err != nil {
			last = err
		} else if s != not {
			return s
		}
		time.Sleep(20 * time.Millisecond) // polling the cluster's state
	}
	c.t.Fatalf("natstest: %s has no new leader after %v (last: %v)\n%s", what, c.opts.readyTimeout(), last, c.logs())
	return nil
}

func (c *Cluster) leader(js jetstream.JetStream, stream string) (*Server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	return c.running(s.CachedInfo().Cluster)
}

// running returns the leader ci names, if it is one of the cluster's
// servers and running.
func (c *Cluster) running(ci *jetstream.ClusterInfo) (*Server, error) {
	if ci == nil || ci.Leader == "" {
		return nil, errors.New("no leader")
	}
	l := c.Server(ci.Leader)
	if l == nil || !l.Running() {
		return nil, fmt.Errorf("leader %q is not running", ci.Leader)
	}
	return l, nil
}

// logs returns the last lines of every server's log, for a failure
// message.
func (c *Cluster) logs() string {
	var b strings.Builder
	for _, s := range c.Servers {
		fmt.Fprintf(&b, "--- %s:\n%s\n", s.name, s.Log())
	}
	return b.String()
}
