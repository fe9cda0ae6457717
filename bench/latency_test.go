package bench

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A slowProxy forwards TCP connections to one Redis node on loopback and
// delays every reply by a settable latency. Requests pass at once, and
// pipelined replies keep their spacing: each chunk read from the node is
// written to the client latency after it was read, not latency after the
// previous chunk, so the proxy adds latency without limiting throughput.
//
// It exists for case (d) only; it is not a fault injector.
type slowProxy struct {
	ln      net.Listener
	up      string
	latency atomic.Int64 // nanoseconds

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// startSlowProxy listens on a free loopback port and forwards to upstream
// until t's cleanup.
func startSlowProxy(t testing.TB, upstream string) *slowProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("bench: proxy listen: %v", err)
	}
	p := &slowProxy{ln: ln, up: upstream}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *slowProxy) Addr() string { return p.ln.Addr().String() }

// SetLatency sets the delay added to every reply from now on.
func (p *slowProxy) SetLatency(d time.Duration) { p.latency.Store(int64(d)) }

func (p *slowProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.DialTimeout("tcp", p.up, time.Second)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); pipe(u, c); u.Close(); c.Close() }()
		go func() { defer p.wg.Done(); p.delayed(c, u); u.Close(); c.Close() }()
	}
}

func pipe(dst, src net.Conn) { _, _ = io.Copy(dst, src) }

// chunk is one read from the node, due at the client at due.
type chunk struct {
	data []byte
	due  time.Time
}

// delayed copies src to dst, holding each chunk until its due time.
func (p *slowProxy) delayed(dst, src net.Conn) {
	q := make(chan chunk, 1024)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{buf[:n], time.Now().Add(time.Duration(p.latency.Load()))}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		if d := time.Until(c.due); d > 0 {
			time.Sleep(d)
		}
		if _, err := dst.Write(c.data); err != nil {
			for range q { // drain so the reader can exit
			}
			return
		}
	}
}

func (p *slowProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
