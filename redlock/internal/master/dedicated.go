package master

import (
	"context"
	"net"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/seed818c56a1/quorumlock/internal/autopipe"
)

// dedicatedPoolSize is the connection pool of each of the library's dedicated clients:
// one batch in flight, autopipe.DefaultMaxOverdue overdue ones, and ROLE:
// ten.
const dedicatedPoolSize = 2 + autopipe.DefaultMaxOverdue

// dedicatedProtocol is the RESP version of the library's dedicated clients, whatever
// the caller's: RESP2. Every reply the library reads means the same in
// both (its scripts return integers, strings, nil and arrays of them, never
// a Lua boolean; CLUSTER SHARDS is read as maps or as flat lists; INFO,
// ROLE, TIME, CONFIG GET and HGETALL go through go-redis's readers of
// both), and RESP2 has no push notifications: go-redis peeks at a RESP3
// connection for them (a recvfrom system call) before a batch — about six
// per lock and unlock over five masters, none over RESP2 — and keeps a
// push processor per client.
const dedicatedProtocol = 2

// LateWindow is how long after a call's node timeout the library still
// reads its reply (to undo a late grant) before it drops the connection:
// four node timeouts, at most autopipe.DefaultLateWindow (250 ms). Every
// wait on a node ends by the node timeout plus this window.
func LateWindow(nodeTimeout time.Duration) time.Duration {
	return min(4*nodeTimeout, autopipe.DefaultLateWindow)
}

// SocketBound bounds each socket operation of the library's dedicated clients
// that has no tighter deadline of its own — a dial, a pub/sub handshake —
// and is the read and write timeout behind every context but a batch's
// (whose reads end at its calls' latest deadline plus the late window: see
// batchClient): half a second, or two node timeouts plus their late windows
// if that is longer.
func SocketBound(nodeTimeout time.Duration) time.Duration {
	return max(500*time.Millisecond, 2*(nodeTimeout+LateWindow(nodeTimeout)))
}

// dedicatedClient returns the library's dedicated client to the server(s) rdb talks
// to, built from rdb's options — address, credentials, TLS, Dialer, DB,
// OnConnect kept; RESP2 (dedicatedProtocol) — so that every read is cut at its context's
// deadline (ContextTimeoutEnabled) and its connection dropped, nothing is
// retried (a batch re-sent by go-redis could run twice and would hold up
// the calls behind it), and every dial, read and write is bounded by
// bound. It returns nil for a client type it cannot rebuild (a
// UniversalClient type of the caller's), which the library then uses as it is.
// A Sentinel failover client's dials are recorded in dialed (nil for any
// other client): the master it reaches.
func dedicatedClient(rdb redis.UniversalClient, bound time.Duration, dialed *dialedAddr) redis.UniversalClient {
	switch r := rdb.(type) {
	case *redis.Client:
		return dedicatedDialedClient(*r.Options(), bound, dialed)
	case *redis.ClusterClient:
		o := *r.Options()
		o.MaintNotificationsConfig = noMaintNotifications()
		o.Protocol = dedicatedProtocol
		o.ContextTimeoutEnabled, o.MaxRetries, o.DialerRetries = true, -1, 1
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = bound, bound, bound, bound
		o.PoolSize, o.PipelinePoolSize, o.MaxConcurrentDials = dedicatedPoolSize, dedicatedPoolSize, 0
		o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns = 0, 0, 0
		o.Dialer = boundDialer(o.Dialer, bound)
		o.PushNotificationProcessor = nil
		// go-redis appends the nodes it learns to Addrs' array: the given
		// client's, whose spare capacity two clients would write at once.
		o.Addrs = slices.Clip(slices.Clone(o.Addrs))
		return redis.NewClusterClient(&o)
	case *redis.Ring:
		o := *r.Options()
		o.Protocol = dedicatedProtocol
		o.ContextTimeoutEnabled, o.MaxRetries, o.DialerRetries = true, -1, 1
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = bound, bound, bound, bound
		o.PoolSize, o.PipelinePoolSize = dedicatedPoolSize, dedicatedPoolSize
		o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns = 0, 0, 0
		o.Dialer = boundDialer(o.Dialer, bound)
		return redis.NewRing(&o)
	}
	return nil
}

// dedicatedServerClient returns the library's dedicated client to one server, built
// from o as dedicatedClient says: a plain master given, or one primary of a
// cluster member (route.go).
func dedicatedServerClient(o redis.Options, bound time.Duration) *redis.Client {
	return dedicatedDialedClient(o, bound, nil)
}

// dedicatedDialedClient is dedicatedServerClient recording every connection it dials
// in dialed, unless nil.
func dedicatedDialedClient(o redis.Options, bound time.Duration, dialed *dialedAddr) *redis.Client {
	o.MaintNotificationsConfig = noMaintNotifications()
	// Client-side caching would share the caller's cache: the library
	// reads nothing it could cache.
	o.ClientSideCache, o.ClientSideCacheConfig = nil, nil
	o.PushNotificationProcessor = nil // the caller's has its handlers already
	o.Protocol = dedicatedProtocol
	o.ContextTimeoutEnabled, o.MaxRetries, o.DialerRetries = true, -1, 1
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = bound, bound, bound, bound
	o.PoolSize, o.PipelinePoolSize, o.MaxConcurrentDials = dedicatedPoolSize, dedicatedPoolSize, 0
	o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns = 0, 0, 0
	if isDefaultDialer(o.Dialer) {
		o.Dialer = nil // NewClient makes one for o: bounded, TLS included
	}
	o.Dialer = dialed.wrap(boundDialer(o.Dialer, bound))
	return redis.NewClient(&o)
}

// A dialedAddr is the address of the last connection a client dialed,
// normalized (NormalAddr): for a Sentinel member, the master it reaches
// now, which votes and errors name (Node.Name).
type dialedAddr struct{ last atomic.Pointer[string] }

// wrap returns dial recording the remote address of each connection it
// makes in d; dial itself if d or dial is nil.
func (d *dialedAddr) wrap(dial func(context.Context, string, string) (net.Conn, error)) func(context.Context, string, string) (net.Conn, error) {
	if d == nil || dial == nil {
		return dial
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		cn, err := dial(ctx, network, addr)
		if err == nil && cn != nil {
			if ra := cn.RemoteAddr(); ra != nil {
				a := NormalAddr(ra.String())
				d.last.Store(&a)
			}
		}
		return cn, err
	}
}

// sentinelName is what votes and errors call a Sentinel member: "sentinel
// master", followed by the address of the master its client last dialed
// once it has dialed one.
func (d *dialedAddr) sentinelName() string {
	if a := d.last.Load(); a != nil {
		return "sentinel master " + *a
	}
	return "sentinel master"
}

// noMaintNotifications turns off go-redis's maintenance notifications
// (endpoints moving during a managed service's upgrade) for the library's
// dedicated clients: they cost a command in every connection's handshake and
// background goroutines, and a connection that stops answering is the
// library's business anyway — it gives up on it at the node timeout.
func noMaintNotifications() *maintnotifications.Config {
	return &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}

// defaultDialer is go-redis's own dialer, for isDefaultDialer.
var defaultDialer = reflect.ValueOf(redis.NewDialer(&redis.Options{})).Pointer()

// isDefaultDialer reports whether dial is go-redis's own dialer, which
// NewClient put there: bound to the caller's options (their DialTimeout, and
// for TLS no context at all), it is rebuilt for the library's.
func isDefaultDialer(dial func(context.Context, string, string) (net.Conn, error)) bool {
	return dial != nil && reflect.ValueOf(dial).Pointer() == defaultDialer
}

// boundDialer wraps dial (go-redis's default if nil) so that no dial
// outlasts bound, whatever the context it is given.
func boundDialer(dial func(context.Context, string, string) (net.Conn, error), bound time.Duration) func(context.Context, string, string) (net.Conn, error) {
	if dial == nil {
		return nil
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, bound)
		defer cancel()
		return dial(ctx, network, addr)
	}
}

// A predial sets up connections to one node in the background, ahead of
// the calls that need them. A call that
// finds no idle connection dials one and runs its handshake (HELLO, CLIENT
// SETINFO: round trips of their own) under its own deadline plus the late
// window; on a slow link or in a starved process that may never be enough,
// and each failed handshake drops its connection. So after every call that
// got no answer, and beside the node's first call, one pipelined PING at a
// time runs under a budget of its own (four SocketBounds; each read and
// write still within one): the connection it sets up stays pooled for the
// next batches. Close stops it (cut ends it at once) and waits for it.
type predial struct {
	budget time.Duration
	first  atomic.Bool // the node's first call has started one
	mu     sync.Mutex
	busy   bool
	closed bool
	wg     sync.WaitGroup
}

func (p *predial) start(rdb redis.UniversalClient) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.busy || p.closed {
		return
	}
	p.busy = true
	p.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), p.budget)
		if rc, ok := rdb.(*redis.Client); ok {
			// Into the pool the pipe's senders hold their connections from
			// (autopipe: one each, over a client that never retries).
			c := rc.Conn()
			_ = c.Ping(ctx).Err()
			_ = c.Close()
		} else {
			pl := rdb.Pipeline()
			pl.Ping(ctx)
			_, _ = pl.Exec(ctx)
		}
		cancel()
		p.mu.Lock()
		p.busy = false
		p.mu.Unlock()
	})
}

// stop refuses every later start.
func (p *predial) stop() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
}
