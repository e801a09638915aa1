package natstest_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge/natstest"
)

func connect(t *testing.T, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// TestServerKeepsStreamsAcrossKill: a stream written before a SIGKILL is
// there, whole, once the server is restarted on the same store.
func TestServerKeepsStreamsAcrossKill(t *testing.T) {
	s := natstest.StartServer(t, natstest.Options{SyncAlways: true})
	_, js := connect(t, s.URL())
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := js.Publish(ctx(t), "s", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	s.Kill()
	if s.Running() {
		t.Fatal("Running() after Kill")
	}
	s.Restart()
	st, err := js.Stream(ctx(t), "S")
	if err != nil {
		t.Fatal(err)
	}
	if got := st.CachedInfo().State.Msgs; got != 10 {
		t.Fatalf("stream holds %d messages after a kill and restart, want 10", got)
	}
}

// TestClusterElectsNewLeader: killing a replicated stream's leader elects
// another; the stream keeps what it stored; the old leader rejoins.
func TestClusterElectsNewLeader(t *testing.T) {
	c := natstest.StartCluster(t, 3, natstest.Options{})
	_, js := connect(t, c.URL())
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := js.Publish(ctx(t), "s", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	old := c.StreamLeader(js, "S")
	start := time.Now()
	old.Kill()
	now := c.WaitStreamLeader(js, "S", old)
	t.Logf("leader %s killed, %s elected after %v", old.Name(), now.Name(), time.Since(start).Round(time.Millisecond))
	old.Restart()
	st, err := js.Stream(ctx(t), "S")
	if err != nil {
		t.Fatal(err)
	}
	if got := st.CachedInfo().State.Msgs; got != 10 {
		t.Fatalf("stream holds %d messages after failover, want 10", got)
	}
}

// TestRelayCountsCutsAndHolds: the relay counts each publish with a
// payload on the wire, a Cut makes the client reconnect, and a Hold stops
// traffic until Release.
func TestRelayCountsCutsAndHolds(t *testing.T) {
	s := natstest.StartServer(t, natstest.Options{})
	r := natstest.NewRelay(t, s.URL())
	nc, _ := connect(t, r.URL())
	sub, err := nc.SubscribeSync("x")
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := nc.Publish("x", []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Publish("x", nil); err != nil { // no payload: not counted
		t.Fatal(err)
	}
	if err := nc.PublishMsg(&nats.Msg{Subject: "x", Header: nats.Header{"K": {"v"}}}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := r.Published("x"); got != 6 {
		t.Errorf("Published(x) = %d, want 6 (five with data, one with headers only)", got)
	}
	for range 7 {
		if _, err := sub.NextMsg(5 * time.Second); err != nil {
			t.Fatal(err)
		}
	}

	reconnected := make(chan struct{}, 1)
	nc.SetReconnectHandler(func(*nats.Conn) { reconnected <- struct{}{} })
	r.Cut()
	select {
	case <-reconnected:
	case <-time.After(10 * time.Second):
		t.Fatal("no reconnection after Cut")
	}

	r.Hold()
	if err := nc.Publish("x", []byte("held")); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.NextMsg(200 * time.Millisecond); err == nil {
		t.Fatal("a message passed while the relay held traffic")
	}
	r.Release()
	if m, err := sub.NextMsg(5 * time.Second); err != nil || string(m.Data) != "held" {
		t.Fatalf("after Release: %v, %v; want the held message", m, err)
	}
}

// TestServerCPU: a running server's CPU time is read and grows with its
// work; a server that is down reads 0.
func TestServerCPU(t *testing.T) {
	s := natstest.StartServer(t, natstest.Options{})
	before := s.CPU()
	nc, err := nats.Connect(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for range 200000 {
		_ = nc.Publish("load", []byte("x"))
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if after := s.CPU(); after <= before {
		t.Errorf("CPU %v then %v after 200 000 messages, want it to grow", before, after)
	}
	s.Kill()
	if got := s.CPU(); got != 0 {
		t.Errorf("CPU of a server that is down = %v, want 0", got)
	}
}
