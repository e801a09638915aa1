package apiserver

import (
	"io"
	"net"
	"sync"
)

// proxy forwards TCP connections on a fixed loopback address to the
// apiserver's current address, so that clients keep working when the
// apiserver is stopped and started again (on another port: the test server
// picks a free one), and so that closing it ends every connection this
// process made, also to an external apiserver. While no apiserver runs, connections are accepted and
// closed at once, which clients see as a transport error, as with a server
// that is down.
//
// newProxy starts one goroutine, the accept loop, and each connection two
// more, which copy bytes each way; close ends them all and waits for them.
type proxy struct {
	ln net.Listener
	wg sync.WaitGroup

	mu      sync.Mutex // guards backend, conns
	backend string     // "" while no apiserver runs
	conns   map[net.Conn]struct{}
}

func newProxy() (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// setBackend points new connections at addr ("" refuses them) and closes
// every open one, as a stopping server would.
func (p *proxy) setBackend(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backend = addr
	for c := range p.conns {
		c.Close()
	}
}

// close stops accepting and waits for every connection goroutine.
func (p *proxy) close() {
	p.ln.Close()
	p.setBackend("")
	p.wg.Wait()
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

func (p *proxy) forward(c net.Conn) {
	defer p.wg.Done()
	p.mu.Lock()
	backend := p.backend
	p.mu.Unlock()
	if backend == "" {
		c.Close()
		return
	}
	b, err := net.Dial("tcp", backend)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.backend != backend { // the server changed meanwhile
		p.mu.Unlock()
		c.Close()
		b.Close()
		return
	}
	p.conns[c], p.conns[b] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() {
		io.Copy(b, c)
		b.Close()
		close(done)
	}()
	io.Copy(c, b)
	c.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, b)
	p.mu.Unlock()
}
