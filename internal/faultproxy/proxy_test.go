package faultproxy_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/seed818c56a1/quorumlock/internal/faultproxy"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// setup starts one node and a proxy in front of it, and returns a warm
// client through the proxy (context deadlines honoured, no retries) and a
// client straight to the node.
func setup(t *testing.T) (p *faultproxy.Proxy, proxied, direct *redis.Client) {
	t.Helper()
	lab := redislab.Start(t, 1)
	p = faultproxy.Start(t, lab.Addrs()[0])
	proxied = redis.NewClient(&redis.Options{
		Addr: p.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1, DialTimeout: time.Second,
	})
	t.Cleanup(func() { proxied.Close() })
	if err := proxied.Ping(testkit.Context(t, 2*time.Second)).Err(); err != nil {
		t.Fatalf("PING through proxy: %v", err)
	}
	return p, proxied, lab.Clients(t)[0].(*redis.Client)
}

func TestReplyLatency(t *testing.T) {
	t.Parallel()
	p, c, _ := setup(t)
	const delay = 30 * time.Millisecond
	p.SetLatency(0, delay)
	start := time.Now()
	if err := c.Ping(testkit.Context(t, 2*time.Second)).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	if got := time.Since(start); got < delay {
		t.Errorf("PING took %v, want at least %v", got, delay)
	}
}

// TestLatencyIsPerChunk sends ten paced chunks through a 100 ms reply
// latency: they must arrive in order, each about 100 ms after it was sent,
// not 100 ms after the previous one.
func TestLatencyIsPerChunk(t *testing.T) {
	t.Parallel()
	const chunks, pace, delay = 10, 5 * time.Millisecond, 100 * time.Millisecond
	up := serveOnce(t, func(conn net.Conn) {
		for i := range chunks {
			fmt.Fprintf(conn, "%d\n", i)
			time.Sleep(pace) // pacing, so that the proxy reads separate chunks
		}
	})
	p := faultproxy.Start(t, up)
	p.SetLatency(0, delay)
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("dial proxy: %v", err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatalf("SetDeadline: %v", err)
	}
	start := time.Now()
	r := bufio.NewReader(conn)
	for i := range chunks {
		var got int
		if _, err := fmt.Fscanln(r, &got); err != nil || got != i {
			t.Fatalf("line %d = %d, %v; want %d", i, got, err, i)
		}
	}
	if took := time.Since(start); took < delay || took > chunks*delay/2 {
		t.Errorf("%d chunks took %v, want between %v and %v", chunks, took, delay, chunks*delay/2)
	}
}

// serveOnce runs handle on the first connection to a fresh listener and
// returns its address; everything is closed in t.Cleanup.
func serveOnce(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		handle(conn)
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

func TestBlackhole(t *testing.T) {
	t.Parallel()
	p, c, _ := setup(t)
	p.SetBlackhole(true)
	if err := c.Ping(testkit.Context(t, 50*time.Millisecond)).Err(); err == nil {
		t.Fatalf("PING through blackhole: nil error, want a timeout")
	}
	p.SetBlackhole(false)
	if err := c.Ping(testkit.Context(t, 2*time.Second)).Err(); err != nil {
		t.Fatalf("PING after blackhole: %v", err)
	}
}

// TestBlackholedRequestIsNeverApplied sends a SET into a blackhole, then a
// PING on the same connection once it is over: the reply must be PONG, not
// the SET's OK, and the node must not hold the key.
func TestBlackholedRequestIsNeverApplied(t *testing.T) {
	t.Parallel()
	p, _, direct := setup(t)
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("dial proxy: %v", err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	roundTrip(t, conn, r, "PING\r\n", "+PONG\r\n") // the link is up
	p.SetBlackhole(true)
	const set = "SET lost v\r\n"
	if _, err := conn.Write([]byte(set)); err != nil {
		t.Fatalf("write SET: %v", err)
	}
	testkit.Eventually(t, 2*time.Second, "proxy swallowed the SET", func() bool {
		return p.Discarded() >= int64(len(set))
	})
	p.SetBlackhole(false)
	roundTrip(t, conn, r, "PING\r\n", "+PONG\r\n")
	if n, err := direct.Exists(testkit.Context(t, 2*time.Second), "lost").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS lost = %d, %v; want 0", n, err)
	}
}

func roundTrip(t *testing.T, conn net.Conn, r *bufio.Reader, req, want string) {
	t.Helper()
	if err := conn.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		t.Fatalf("SetDeadline: %v", err)
	}
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatalf("write %q: %v", req, err)
	}
	if got, err := r.ReadString('\n'); err != nil || got != want {
		t.Fatalf("reply to %q = %q, %v; want %q", req, got, err, want)
	}
}

func TestDropReplies(t *testing.T) {
	t.Parallel()
	p, c, direct := setup(t)
	p.SetDropReplies(true)
	if err := c.Set(testkit.Context(t, 100*time.Millisecond), "landed", "v", 0).Err(); err == nil {
		t.Fatalf("SET with dropped reply: nil error, want a timeout")
	}
	testkit.Eventually(t, 2*time.Second, "SET landed on the node", func() bool {
		v, err := direct.Get(context.Background(), "landed").Result()
		return err == nil && v == "v"
	})
	p.SetDropReplies(false)
	if err := c.Ping(testkit.Context(t, 2*time.Second)).Err(); err != nil {
		t.Fatalf("PING after SetDropReplies(false): %v", err)
	}
}

func TestRefuse(t *testing.T) {
	t.Parallel()
	p, c, _ := setup(t)
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("dial proxy: %v", err)
	}
	defer conn.Close()
	roundTrip(t, conn, bufio.NewReader(conn), "PING\r\n", "+PONG\r\n")
	p.SetRefuse(true)
	if _, err := conn.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("read on refused connection: err = %v, want reset or EOF", err)
	}
	if err := c.Ping(testkit.Context(t, 2*time.Second)).Err(); err == nil || isTimeout(err) {
		t.Errorf("PING while refusing: err = %v, want a connection error", err)
	}
	p.SetRefuse(false)
	if err := c.Ping(testkit.Context(t, 2*time.Second)).Err(); err != nil {
		t.Fatalf("PING after SetRefuse(false): %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

func TestCloseStopsListening(t *testing.T) {
	t.Parallel()
	p, _, _ := setup(t)
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Errorf("dial after Close: nil error, want refused")
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
}
