package natstest_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldgo/herald/natsbridge/natstest"
)

// ExampleStartServer kills a nats-server process in the middle of a
// stream and starts it again on its store: what JetStream acknowledged
// before the kill is still there. In a test, pass t instead of the
// stand-in.
func ExampleStartServer() {
	t := newStandIn()
	defer t.done()
	s := natstest.StartServer(t, natstest.Options{SyncAlways: true})
	nc, _ := nats.Connect(s.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, _ := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders"}})
	_, err := js.Publish(ctx, "orders", []byte("before the kill"))
	fmt.Println("acknowledged:", err == nil)

	s.Kill() // SIGKILL: no shutdown, no flush
	s.Restart()
	info, err := stream.Info(ctx) // nats.go reconnects meanwhile
	fmt.Println("stored after the restart:", info.State.Msgs, err)
	// Output:
	// acknowledged: true
	// stored after the restart: 1 <nil>
}

// ExampleRelay puts a relay between a client and a server: it counts what
// the client publishes on the wire, and cuts every connection on demand.
func ExampleRelay() {
	t := newStandIn()
	defer t.done()
	s := natstest.StartServer(t, natstest.Options{})
	r := natstest.NewRelay(t, s.URL())
	reconnected := make(chan struct{}, 1)
	nc, _ := nats.Connect(r.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond),
		nats.ReconnectHandler(func(*nats.Conn) { reconnected <- struct{}{} }))
	defer nc.Close()
	for range 3 {
		_ = nc.Publish("orders", []byte("x"))
	}
	_ = nc.Flush()
	fmt.Println("published on the wire:", r.Published("orders"))
	r.Cut() // every connection through the relay is reset
	<-reconnected
	fmt.Println("reconnected:", nc.IsConnected())
	// Output:
	// published on the wire: 3
	// reconnected: true
}

// standIn is a natstest.T for a program outside a test: it runs the
// cleanups when done, and panics on a failure.
type standIn struct {
	cleanups []func()
	dirs     []string
}

func newStandIn() *standIn { return &standIn{} }

func (s *standIn) Helper()                         {}
func (s *standIn) Cleanup(f func())                { s.cleanups = append(s.cleanups, f) }
func (s *standIn) Fatal(args ...any)               { panic(fmt.Sprint(args...)) }
func (s *standIn) Fatalf(format string, a ...any)  { panic(fmt.Sprintf(format, a...)) }
func (s *standIn) Errorf(format string, a ...any)  { fmt.Fprintf(os.Stderr, format+"\n", a...) }
func (s *standIn) Logf(format string, args ...any) {}

func (s *standIn) TempDir() string {
	dir, err := os.MkdirTemp("", "natstest")
	if err != nil {
		panic(err)
	}
	s.dirs = append(s.dirs, dir)
	return dir
}

// done runs the cleanups, the last registered first, as testing does.
func (s *standIn) done() {
	for _, f := range slices.Backward(s.cleanups) {
		f()
	}
	for _, dir := range s.dirs {
		_ = os.RemoveAll(dir)
	}
}
