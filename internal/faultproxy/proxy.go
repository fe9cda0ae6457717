// Package faultproxy is a TCP proxy that injects network faults between a
// client and one Redis node, for tests: latency, a blackhole (partition that
// swallows bytes), lost replies, and refused connections.
//
// Faults are per proxy, so a test puts one proxy in front of each node it
// wants to disturb. Every setting takes effect at once, for existing and new
// connections alike. Standard library only.
package faultproxy

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// direction says which way bytes flow through a link.
type direction int

const (
	request direction = iota // client to server
	reply                    // server to client
)

// A Proxy forwards TCP connections from its own loopback address to one
// upstream address, applying the faults currently set. Its methods are safe
// for concurrent use. The zero value is not usable; call Start.
type Proxy struct {
	upstream string
	ln       net.Listener
	wg       sync.WaitGroup // every goroutine of the proxy and its links

	mu     sync.Mutex
	faults faults
	links  map[*link]struct{}
	closed bool

	discarded atomic.Int64 // bytes swallowed by a fault, for tests
}

// faults is the set of faults in force; guarded by Proxy.mu.
type faults struct {
	latency     [2]time.Duration // indexed by direction
	blackhole   bool
	epoch       uint64 // incremented each time a blackhole starts
	dropReplies bool
	refuse      bool
}

// Start returns a proxy listening on 127.0.0.1:0 that forwards to upstream.
// It is closed in t.Cleanup.
func Start(t testing.TB, upstream string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("faultproxy: listen: %v", err)
	}
	p := &Proxy{upstream: upstream, ln: ln, links: make(map[*link]struct{})}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("faultproxy: Close: %v", err)
		}
	})
	return p
}

// Addr returns the host:port that clients dial instead of the upstream.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Discarded returns how many bytes faults have swallowed so far, either
// way, so that a test can wait until the proxy has read what it sent
// instead of assuming that a request written is a request swallowed.
func (p *Proxy) Discarded() int64 { return p.discarded.Load() }

// SetLatency delays every chunk of bytes forwarded client→server by request
// and server→client by reply; 0 means no delay. Each chunk is due at the
// time it was read plus the delay in force then, so back-to-back chunks are
// not delayed cumulatively. Order is preserved: a chunk never overtakes an
// earlier one, so lowering the latency takes effect once the chunks already
// delayed are out.
func (p *Proxy) SetLatency(request, reply time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults.latency = [2]time.Duration{max(request, 0), max(reply, 0)}
}

// SetBlackhole starts or ends a partition that swallows bytes. While on,
// nothing is forwarded either way: bytes read are discarded, including
// bytes read earlier that were still delayed by latency, and are never
// delivered after the blackhole ends. Connections stay open. A connection
// accepted while the blackhole is on never reaches the server: it stays a
// sink until closed.
func (p *Proxy) SetBlackhole(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on && !p.faults.blackhole {
		p.faults.epoch++
	}
	p.faults.blackhole = on
}

// SetDropReplies makes replies vanish while on: requests are still
// forwarded, so writes land on the server, but what the server answers is
// discarded — "the write landed, the reply was lost".
func (p *Proxy) SetDropReplies(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults.dropReplies = on
}

// SetRefuse, while on, resets every existing connection at once and every
// new one as soon as it is accepted: the client sees its connections reset.
func (p *Proxy) SetRefuse(on bool) {
	p.mu.Lock()
	p.faults.refuse = on
	var victims []*link
	if on {
		victims = p.linksLocked()
	}
	p.mu.Unlock()
	for _, l := range victims {
		l.reset()
	}
}

// Close stops accepting, closes every connection and returns once all the
// proxy's goroutines have ended. Closing twice is a no-op.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	victims := p.linksLocked()
	p.mu.Unlock()
	err := p.ln.Close()
	for _, l := range victims {
		l.close()
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) linksLocked() []*link {
	ls := make([]*link, 0, len(p.links))
	for l := range p.links {
		ls = append(ls, l)
	}
	return ls
}

// accept runs until the listener is closed.
func (p *Proxy) accept() {
	for {
		conn, err := p.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue // a transient accept error; the next Accept may work
		}
		p.admit(conn)
	}
}

// admit registers a new client connection and starts serving it; a
// connection that arrives while the proxy is closed or refusing is reset.
func (p *Proxy) admit(conn net.Conn) {
	l := newLink(p, conn)
	p.mu.Lock()
	ok := !p.closed && !p.faults.refuse
	if ok {
		p.links[l] = struct{}{}
		if p.faults.blackhole {
			p.wg.Go(l.sink)
		} else {
			p.wg.Go(l.serve)
		}
	}
	p.mu.Unlock()
	if !ok {
		l.reset()
	}
}

func (p *Proxy) forget(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.links, l)
}

// stamp returns the chunk for bytes just read in direction d, or false if a
// fault swallows them.
func (p *Proxy) stamp(d direction, data []byte) (chunk, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.swallowsLocked(d) {
		p.discarded.Add(int64(len(data)))
		return chunk{}, false
	}
	due := time.Now().Add(p.faults.latency[d])
	return chunk{data: data, due: due, epoch: p.faults.epoch}, true
}

// deliverable reports whether c may still be written when it falls due: no
// fault swallows it now, and no blackhole started since it was read.
func (p *Proxy) deliverable(d direction, c chunk) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.swallowsLocked(d) || c.epoch != p.faults.epoch {
		p.discarded.Add(int64(len(c.data)))
		return false
	}
	return true
}

func (p *Proxy) swallowsLocked(d direction) bool {
	return p.faults.blackhole || (d == reply && p.faults.dropReplies)
}
