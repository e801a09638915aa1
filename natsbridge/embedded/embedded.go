// Package embedded runs a NATS server with JetStream inside the calling
// process, for tests, demos and deployments on one machine.
//
// # Usage
//
//	srv, err := embedded.Start(embedded.Options{Dir: dir})
//	if err != nil { … }
//	defer srv.Shutdown()
//	nc, err := srv.Connect() // an in-process connection: no socket at all
//	if err != nil { … }
//	defer nc.Close()
//	js, _ := jetstream.New(nc)
//	topic, err := natsbridge.NewTopic[Order](ctx, js, "orders", natsbridge.JSON[Order](), natsbridge.TopicOptions{})
//
// The code that uses the connection is the same for a real cluster: only
// how nc is made changes (nats.Connect(url, …) with the cluster's
// credentials and TLS).
//
// # Security
//
// By default the server listens on nothing: only connections made by
// Server.Connect, inside this process, reach it. Options.Listen opens a TCP
// listener, for other processes; it must name a loopback address (or
// "localhost") unless Options.AllowRemote is set, so a server is never
// exposed on every interface by accident. The embedded server has no
// authentication: anyone who can reach its listener can read and write
// every stream.
//
// # Shutdown
//
// Start starts the server's goroutines; Shutdown stops them and returns
// once every one has exited. Close the connections first, or they will
// try to reconnect to a server that is gone.
package embedded

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// DefaultReadyTimeout is how long Start waits for the server to accept
// connections when Options.ReadyTimeout is zero.
const DefaultReadyTimeout = 10 * time.Second

// Options configures an embedded server. Dir is required; every other
// field has a working zero value.
type Options struct {
	// Dir is the directory JetStream stores streams in. It is created if
	// missing. A server started again on the same Dir finds its streams
	// as they were.
	Dir string
	// Listen is the TCP address other processes connect to, as
	// "host:port". Empty means no listener: only Connect reaches the
	// server. Port 0 picks a free port (see Server.URL). The host must be
	// a loopback address or "localhost" unless AllowRemote is set.
	Listen string
	// AllowRemote permits a Listen host that is not loopback, such as
	// "0.0.0.0". The server has no authentication: set it only where the
	// network is trusted.
	AllowRemote bool
	// MaxPayload is the largest message the server accepts, in bytes.
	// Zero means the server's default (1 MiB); Start refuses a negative
	// one.
	MaxPayload int32
	// Name is the server's name. Zero means "herald-embedded".
	Name string
	// Logger receives the server's notices, warnings and errors. Nil
	// means the server logs nothing.
	Logger *slog.Logger
	// ReadyTimeout bounds how long Start waits for the server to be ready.
	// Zero means DefaultReadyTimeout; Start refuses a negative one.
	ReadyTimeout time.Duration
}

// Server is a running embedded NATS server with JetStream. It is safe for
// concurrent use. Its zero value is not usable: get one from Start.
type Server struct {
	ns       *server.Server
	url      string
	shutdown sync.Once
}

// Start starts a server with JetStream on opts.Dir and returns once it
// accepts connections. It returns an error if opts is invalid or the
// server does not start (a busy port, an unusable directory).
//
// Start starts the server's goroutines (accept loop, JetStream, one or two
// per connection); Server.Shutdown stops every one of them.
func Start(opts Options) (*Server, error) {
	so, err := serverOptions(opts)
	if err != nil {
		return nil, err
	}
	ns, err := server.NewServer(so)
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	if opts.Logger != nil {
		ns.SetLoggerV2(slogLogger{opts.Logger}, false, false, false)
	}
	ns.Start()
	timeout := opts.ReadyTimeout
	if timeout == 0 {
		timeout = DefaultReadyTimeout
	}
	if !ns.ReadyForConnections(timeout) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("embedded: server not ready within %v", timeout)
	}
	s := &Server{ns: ns}
	if opts.Listen != "" {
		addr, ok := ns.Addr().(*net.TCPAddr)
		if !ok {
			s.Shutdown()
			return nil, errors.New("embedded: server has no TCP listener")
		}
		s.url = "nats://" + net.JoinHostPort(so.Host, strconv.Itoa(addr.Port))
	}
	return s, nil
}

// serverOptions checks opts and returns the server's options for them.
func serverOptions(opts Options) (*server.Options, error) {
	if opts.Dir == "" {
		return nil, errors.New("embedded: Options.Dir is required")
	}
	if opts.MaxPayload < 0 {
		return nil, fmt.Errorf("embedded: negative Options.MaxPayload %d", opts.MaxPayload)
	}
	if opts.ReadyTimeout < 0 {
		return nil, fmt.Errorf("embedded: negative Options.ReadyTimeout %v", opts.ReadyTimeout)
	}
	name := opts.Name
	if name == "" {
		name = "herald-embedded"
	}
	so := &server.Options{
		ServerName: name,
		JetStream:  true,
		StoreDir:   opts.Dir,
		MaxPayload: opts.MaxPayload,
		NoSigs:     true,
		NoLog:      opts.Logger == nil,
		DontListen: opts.Listen == "",
		// The HTTP monitor and the cluster ports stay closed: nothing but
		// the client listener (if asked for) is opened.
	}
	if opts.Listen != "" {
		host, port, err := splitListen(opts.Listen, opts.AllowRemote)
		if err != nil {
			return nil, err
		}
		so.Host, so.Port = host, port
	}
	return so, nil
}

// splitListen parses a Listen address and checks that its host is
// loopback unless remote is allowed. Port 0 becomes the server's "pick a
// port" value.
func splitListen(listen string, remote bool) (host string, port int, err error) {
	h, p, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("embedded: Options.Listen %q: %w", listen, err)
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("embedded: Options.Listen %q: bad port", listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	if h == "" {
		// An empty host means every interface to net.Listen.
		return "", 0, fmt.Errorf("embedded: Options.Listen %q: name a host (127.0.0.1 for this machine only)", listen)
	}
	if !remote && !isLoopback(h) {
		return "", 0, fmt.Errorf("embedded: Options.Listen %q is not a loopback address; set AllowRemote to listen on it", listen)
	}
	return h, port, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Connect returns a connection to the server that goes through no socket
// (net.Pipe inside the process). opts are applied after the in-process
// option; the connection does not reconnect once the server is shut down.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	all := append([]nats.Option{nats.InProcessServer(s.ns), nats.Name("herald-embedded-client")}, opts...)
	nc, err := nats.Connect("", all...)
	if err != nil {
		return nil, fmt.Errorf("embedded: connect: %w", err)
	}
	return nc, nil
}

// URL returns the address other processes connect to, as
// "nats://host:port", or "" if the server does not listen.
func (s *Server) URL() string { return s.url }

// NATS returns the underlying nats-server, for what this package does not
// cover (monitoring, account setup).
func (s *Server) NATS() *server.Server { return s.ns }

// Shutdown stops the server and returns once all of its goroutines have
// exited. Streams stored in Options.Dir stay on disk. It is idempotent and
// safe to call from any goroutine.
func (s *Server) Shutdown() {
	s.shutdown.Do(func() {
		s.ns.Shutdown()
	})
	s.ns.WaitForShutdown()
}

// slogLogger passes the server's log lines to a slog.Logger. Debug and
// trace lines are not enabled (SetLoggerV2 is called with them off).
type slogLogger struct{ l *slog.Logger }

func (l slogLogger) Noticef(format string, v ...any) { l.l.Info(fmt.Sprintf(format, v...)) }
func (l slogLogger) Warnf(format string, v ...any)   { l.l.Warn(fmt.Sprintf(format, v...)) }
func (l slogLogger) Fatalf(format string, v ...any)  { l.l.Error(fmt.Sprintf(format, v...)) }
func (l slogLogger) Errorf(format string, v ...any)  { l.l.Error(fmt.Sprintf(format, v...)) }
func (l slogLogger) Debugf(format string, v ...any)  { l.l.Debug(fmt.Sprintf(format, v...)) }
func (l slogLogger) Tracef(format string, v ...any)  { l.l.Debug(fmt.Sprintf(format, v...)) }
