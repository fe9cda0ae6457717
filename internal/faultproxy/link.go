package faultproxy

import (
	"bytes"
	"context"
	"net"
	"sync"
	"time"
)

const (
	// queueLen bounds the chunks in flight per direction; a full queue stops
	// reading, which pushes back on the sender as a slow network would.
	queueLen = 256
	// readSize is the largest chunk read at once.
	readSize = 32 << 10
	// dialTimeout bounds the connection to the upstream.
	dialTimeout = 2 * time.Second
)

// A chunk is bytes read from one side, due for delivery to the other.
type chunk struct {
	data  []byte
	due   time.Time
	epoch uint64 // blackhole epoch when read
}

// A link is one client connection and its upstream connection, pumped by
// four goroutines: a reader and a writer per direction. A reader that hits
// the end of its stream lets its writer deliver what is still delayed; the
// writer then closes the whole link, as does any write error.
type link struct {
	p      *Proxy
	client net.Conn
	ctx    context.Context // done once the link is closed
	cancel context.CancelFunc
	once   sync.Once

	mu sync.Mutex
	up net.Conn // nil until dialled
}

func newLink(p *Proxy, client net.Conn) *link {
	ctx, cancel := context.WithCancel(context.Background())
	return &link{p: p, client: client, ctx: ctx, cancel: cancel}
}

// serve dials the upstream and pumps both directions until the link closes.
func (l *link) serve() {
	d := net.Dialer{Timeout: dialTimeout}
	up, err := d.DialContext(l.ctx, "tcp", l.p.upstream)
	if err != nil {
		l.reset() // the client sees what a failed dial would have shown it
		return
	}
	if !l.setUp(up) {
		return
	}
	toServer := make(chan chunk, queueLen)
	toClient := make(chan chunk, queueLen)
	l.p.wg.Go(func() { l.receive(l.client, toServer, request) })
	l.p.wg.Go(func() { l.deliver(toServer, up, request) })
	l.p.wg.Go(func() { l.receive(up, toClient, reply) })
	l.deliver(toClient, l.client, reply)
}

// setUp records the upstream connection, or closes it and reports false if
// the link was closed while dialling.
func (l *link) setUp(up net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx.Err() != nil {
		up.Close()
		return false
	}
	l.up = up
	return true
}

// sink serves a connection accepted during a blackhole: it never reaches the
// server, and what the client sends is discarded until the link closes.
func (l *link) sink() {
	defer l.close()
	buf := make([]byte, readSize)
	for {
		n, err := l.client.Read(buf)
		l.p.discarded.Add(int64(n))
		if err != nil {
			return
		}
	}
}

// receive reads from src and queues what the faults let through. When src
// ends it closes q, so that chunks still delayed are delivered first.
func (l *link) receive(src net.Conn, q chan<- chunk, d direction) {
	defer close(q)
	buf := make([]byte, readSize)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if c, ok := l.p.stamp(d, bytes.Clone(buf[:n])); ok {
				select {
				case q <- c:
				case <-l.ctx.Done():
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// deliver writes each queued chunk to dst when it falls due, unless a fault
// swallowed it meanwhile. Once q is closed and drained it closes the link:
// one side's end of stream ends the whole connection.
func (l *link) deliver(q <-chan chunk, dst net.Conn, d direction) {
	defer l.close()
	for {
		select {
		case <-l.ctx.Done():
			return
		case c, ok := <-q:
			if !ok || !l.waitUntil(c.due) {
				return
			}
			if !l.p.deliverable(d, c) {
				continue
			}
			if _, err := dst.Write(c.data); err != nil {
				return
			}
		}
	}
}

// waitUntil returns true at due, or false as soon as the link closes.
func (l *link) waitUntil(due time.Time) bool {
	wait := time.Until(due)
	if wait <= 0 {
		return l.ctx.Err() == nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.ctx.Done():
		return false
	}
}

// close ends the link: both connections are closed, which unblocks its
// readers and writers. Safe to call more than once.
func (l *link) close() {
	l.once.Do(func() {
		l.cancel()
		l.client.Close()
		l.mu.Lock()
		if l.up != nil {
			l.up.Close()
		}
		l.mu.Unlock()
		l.p.forget(l)
	})
}

// reset closes the link so that the client sees a reset (RST), not an
// orderly end of stream.
func (l *link) reset() {
	if tcp, ok := l.client.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0) // best effort: without it the client sees EOF instead
	}
	l.close()
}
