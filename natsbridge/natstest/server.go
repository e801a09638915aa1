package natstest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Options configures the servers StartServer and StartCluster start. The
// zero value gives JetStream with the server's defaults.
type Options struct {
	// SyncAlways makes JetStream sync every write to disk before it
	// acknowledges (sync_interval: always); by default the server syncs
	// every two minutes and a process kill loses nothing the kernel holds.
	SyncAlways bool
	// MaxPayload is the largest message the servers accept, in bytes. Zero
	// means the server's default (1 MiB).
	MaxPayload int
	// ReadyTimeout bounds how long a start waits for a server (or a
	// cluster's JetStream) to be ready. Zero means 30 seconds.
	ReadyTimeout time.Duration
}

func (o Options) readyTimeout() time.Duration {
	if o.ReadyTimeout > 0 {
		return o.ReadyTimeout
	}
	return 30 * time.Second
}

// Server is a nats-server process with JetStream, listening on loopback.
// Kill and Restart keep its name, ports and store directory, so that a
// restarted server finds its streams and its cluster. It is safe for
// concurrent use. Its zero value is not usable: get one from StartServer
// or StartCluster.
type Server struct {
	t      T
	name   string
	port   int
	conf   string // the configuration file
	log    string // where the process writes its output
	opts   Options
	single bool // not part of a cluster: Restart waits for JetStream itself

	mu  sync.Mutex // guards cmd
	cmd *exec.Cmd  // nil while the server is down
}

// StartServer starts one nats-server process with JetStream, storing in a
// directory of the test's, and stops it when the test ends.
func StartServer(t T, o Options) *Server {
	t.Helper()
	s := newServer(t, "n1", o, "")
	s.single = true
	s.Restart()
	return s
}

// newServer writes a server's configuration; cluster, if not empty, is the
// configuration's cluster block.
func newServer(t T, name string, o Options, cluster string) *Server {
	t.Helper()
	dir := t.TempDir()
	s := &Server{t: t, name: name, port: freePort(t), opts: o, log: filepath.Join(dir, "server.log"), conf: filepath.Join(dir, "server.conf")}
	var b strings.Builder
	fmt.Fprintf(&b, "server_name: %q\nlisten: \"127.0.0.1:%d\"\n", name, s.port)
	if o.MaxPayload > 0 {
		fmt.Fprintf(&b, "max_payload: %d\n", o.MaxPayload)
	}
	fmt.Fprintf(&b, "jetstream {\n  store_dir: %q\n", filepath.Join(dir, "store"))
	if o.SyncAlways {
		b.WriteString("  sync_interval: always\n")
	}
	b.WriteString("}\n")
	b.WriteString(cluster)
	if err := os.WriteFile(s.conf, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	return s
}

// Name returns the server's name, as JetStream reports it (a stream's
// leader, say).
func (s *Server) Name() string { return s.name }

// URL returns the address clients connect to: nats://127.0.0.1:port.
func (s *Server) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.port) }

// Running reports whether the server's process is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Kill ends the server's process with SIGKILL, as a crash would, and
// returns once it has exited. Nothing is flushed or said to clients or to
// the cluster. It does nothing if the server is down.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart starts the server's process again (or the first time), on the
// same ports and store, and returns once it accepts connections (a single
// server: once JetStream answers too). It fails the test if the server
// does not come up within Options.ReadyTimeout. It does nothing if the
// server is up.
func (s *Server) Restart() {
	s.t.Helper()
	bin := Binary(s.t) // before the lock: it may fail the test
	s.mu.Lock()
	if s.cmd != nil {
		s.mu.Unlock()
		return
	}
	out, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		s.mu.Unlock()
		s.t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", s.conf)
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Start()
	out.Close() // the child has its own descriptor
	if err != nil {
		s.mu.Unlock()
		s.t.Fatalf("natstest: start %s: %v", s.name, err)
	}
	s.cmd = cmd
	s.mu.Unlock()
	s.waitListening()
	if s.single {
		waitJetStream(s.t, s.URL(), s.opts.readyTimeout(), s.Log)
	}
}

// waitListening returns once the server accepts TCP connections.
func (s *Server) waitListening() {
	s.t.Helper()
	deadline := time.Now().Add(s.opts.readyTimeout())
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("natstest: %s does not listen after %v: %v\n%s", s.name, s.opts.readyTimeout(), err, s.Log())
		}
		time.Sleep(10 * time.Millisecond) // polling a port the process opens
	}
}

// Log returns the last lines the server's process wrote (across its
// restarts), for a failure message.
func (s *Server) Log() string {
	data, _ := os.ReadFile(s.log)
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// waitJetStream returns once JetStream at url answers an account info
// request (in a cluster: once it has a meta leader).
func waitJetStream(t T, url string, timeout time.Duration, log func() string) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatalf("natstest: connect %s: %v", url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("natstest: JetStream at %s not ready after %v: %v\n%s", url, timeout, err, log())
		}
		time.Sleep(50 * time.Millisecond) // polling the server's state
	}
}

// Ports for servers are drawn below Linux's range of ephemeral ports
// (32768 and up), so that no outgoing connection takes the port of a
// server that was killed while it is down; each is handed out once per
// test binary, so that no two servers (of tests that run in parallel) are
// given one port, and locked for its test against the other test binaries
// that run at once (see lockPort): a server of another package's tests
// took the route port of a cluster node while it was down, and the node
// could not start again.
const (
	portLow  = 20000
	portHigh = 32000
)

var (
	portsMu sync.Mutex       // guards ports
	ports   = map[int]bool{} // handed out
)

// freePort returns a TCP port on loopback that nothing listens on and that
// no other server of this test binary was given.
func freePort(t T) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 1000 {
		p := portLow + rand.IntN(portHigh-portLow)
		if ports[p] {
			continue
		}
		locked, release := lockPort(p)
		if !locked {
			continue // another test binary's
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			release()
			continue // in use
		}
		l.Close()
		ports[p] = true
		t.Cleanup(release) // the server may be restarted on it until then
		return p
	}
	t.Fatal("natstest: no free port")
	return 0
}
