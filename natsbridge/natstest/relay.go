package natstest

import (
	"net"
	"strings"
	"sync"
)

// Relay forwards TCP connections from clients to servers, one loopback
// listener per server, so that a test can cut every connection at once
// (Cut), hold what flows both ways without closing anything (Hold, a
// silent path), and count what clients publish (Published), on the wire.
// It is safe for concurrent use. Its zero value is not usable: get one
// from NewRelay.
type Relay struct {
	urls []string

	mu        sync.Mutex // guards listeners, conns, held, published
	listeners []net.Listener
	conns     map[net.Conn]struct{}
	held      chan struct{} // closed while traffic flows; nil never
	published map[string]int

	wg sync.WaitGroup
}

// NewRelay starts a relay in front of the servers at urls (nats://host:port
// each) and stops it, closing every connection, when the test ends.
func NewRelay(t T, urls ...string) *Relay {
	t.Helper()
	r := &Relay{conns: map[net.Conn]struct{}{}, held: make(chan struct{}), published: map[string]int{}}
	close(r.held)
	for _, u := range urls {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		r.listeners = append(r.listeners, l)
		r.urls = append(r.urls, "nats://"+l.Addr().String())
		target := strings.TrimPrefix(u, "nats://")
		r.wg.Go(func() { r.accept(l, target) })
	}
	t.Cleanup(r.close)
	return r
}

// URL returns the relay's listeners, comma-separated, as nats.Connect
// takes them: connect through it in place of the servers.
func (r *Relay) URL() string { return strings.Join(r.urls, ",") }

// Cut closes every connection through the relay, as a reset network would;
// clients reconnect through it.
func (r *Relay) Cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.conns {
		c.Close()
	}
}

// Hold stops forwarding in both directions until Release, without closing
// anything: to both ends the path is silent.
func (r *Relay) Hold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.held:
		r.held = make(chan struct{})
	default:
	}
}

// Release forwards again what Hold stopped.
func (r *Relay) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.held:
	default:
		close(r.held)
	}
}

// Published returns how many messages with a payload (data or headers)
// clients published to subject through the relay so far: each send on the
// wire, retries included.
func (r *Relay) Published(subject string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.published[subject]
}

func (r *Relay) accept(l net.Listener, target string) {
	for {
		client, err := l.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", target)
		if err != nil {
			client.Close() // the server is down: the client tries again
			continue
		}
		if !r.track(client, server) {
			return
		}
		r.wg.Go(func() { r.pipe(server, client, newPubScanner(r.count)) })
		r.wg.Go(func() { r.pipe(client, server, nil) })
	}
}

// track records a pair of connections, or closes them and reports false
// if the relay is closing.
func (r *Relay) track(a, b net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns == nil {
		a.Close()
		b.Close()
		return false
	}
	r.conns[a], r.conns[b] = struct{}{}, struct{}{}
	return true
}

// pipe copies src to dst until either fails, waiting while the relay is
// held, and closes both. A scanner, if set, sees what passes.
func (r *Relay) pipe(dst, src net.Conn, scan *pubScanner) {
	defer func() {
		r.mu.Lock()
		delete(r.conns, src)
		delete(r.conns, dst)
		r.mu.Unlock()
		src.Close()
		dst.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			r.mu.Lock()
			held := r.held
			r.mu.Unlock()
			<-held // closed unless the relay holds traffic
			if scan != nil {
				scan.feed(buf[:n])
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (r *Relay) count(subject string) {
	r.mu.Lock()
	r.published[subject]++
	r.mu.Unlock()
}

// close stops accepting, closes every connection and releases what Hold
// stopped, then waits for the relay's goroutines.
func (r *Relay) close() {
	r.mu.Lock()
	for _, l := range r.listeners {
		l.Close()
	}
	for c := range r.conns {
		c.Close()
	}
	r.conns = nil
	r.mu.Unlock()
	r.Release()
	r.wg.Wait()
}
