package redlock

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

// ownPoolSize is the connection pool of each of the library's own clients:
// one batch in flight, autopipe.DefaultMaxOverdue overdue ones, and ROLE:
// ten.
const ownPoolSize = 2 + autopipe.DefaultMaxOverdue

// lateWindow is how long after a call's node timeout the library still
// reads its reply (to undo a late grant) before it drops the connection:
// four node timeouts, at most autopipe.DefaultLateWindow (250 ms). Every
// wait on a node ends by the node timeout plus this window.
func lateWindow(nodeTimeout time.Duration) time.Duration {
	return min(4*nodeTimeout, autopipe.DefaultLateWindow)
}

// socketBound bounds each socket operation of the library's own clients
// that has no tighter deadline of its own — a dial, a pub/sub handshake —
// and is the read and write timeout behind every context but a batch's
// (whose reads end at its calls' latest deadline plus the late window: see
// batchClient): half a second, or two node timeouts plus their late windows
// if that is longer.
func socketBound(nodeTimeout time.Duration) time.Duration {
	return max(500*time.Millisecond, 2*(nodeTimeout+lateWindow(nodeTimeout)))
}

// ownClient returns the library's own client to the server(s) rdb talks
// to, built from rdb's options — address, credentials, TLS, Dialer, DB,
// protocol, OnConnect kept — so that every read is cut at its context's
// deadline (ContextTimeoutEnabled) and its connection dropped, nothing is
// retried (a batch re-sent by go-redis could run twice and would hold up
// the calls behind it), and every dial, read and write is bounded by
// bound. It returns nil for a client type it cannot rebuild (a caller's
// own UniversalClient), which the library then uses as it is.
func ownClient(rdb redis.UniversalClient, bound time.Duration) redis.UniversalClient {
	switch r := rdb.(type) {
	case *redis.Client:
		return ownServerClient(*r.Options(), bound)
	case *redis.ClusterClient:
		o := *r.Options()
		o.MaintNotificationsConfig = noMaintNotifications()
		o.ContextTimeoutEnabled, o.MaxRetries, o.DialerRetries = true, -1, 1
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = bound, bound, bound, bound
		o.PoolSize, o.PipelinePoolSize, o.MaxConcurrentDials = ownPoolSize, ownPoolSize, 0
		o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns = 0, 0, 0
		o.Dialer = boundDialer(o.Dialer, bound)
		o.PushNotificationProcessor = nil
		// go-redis appends the nodes it learns to Addrs' array: the given
		// client's, whose spare capacity two clients would write at once.
		o.Addrs = slices.Clip(slices.Clone(o.Addrs))
		return redis.NewClusterClient(&o)
	case *redis.Ring:
		o := *r.Options()
		o.ContextTimeoutEnabled, o.MaxRetries, o.DialerRetries = true, -1, 1
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = bound, bound, bound, bound
		o.PoolSize, o.PipelinePoolSize = ownPoolSize, ownPoolSize
		o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns = 0, 0, 0
		o.Dialer = boundDialer(o.Dialer, bound)
		return redis.NewRing(&o)
	}
	return nil
}

// ownServerClient returns the library's own client to one server, built
// from o as ownClient says: a plain master given, or one primary of a
// cluster member (route.go).
func ownServerClient(o redis.Options, bound time.Duration) *redis.Client {
	o.MaintNotificationsConfig = noMaintNotifications()
	// Client-side caching would share the caller's cache: the library
	// reads nothing it could cache.
	o.ClientSideCache, o.ClientSideCacheConfig = nil, nil
	o.PushNotificationProcessor = nil // the caller's has its handlers already
	o.ContextTimeoutEnabled, o.MaxRetries, o.DialerRetries = true, -1, 1
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = bound, bound, bound, bound
	o.PoolSize, o.PipelinePoolSize, o.MaxConcurrentDials = ownPoolSize, ownPoolSize, 0
	o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns = 0, 0, 0
	if isDefaultDialer(o.Dialer) {
		o.Dialer = nil // NewClient makes one for o: bounded, TLS included
	}
	o.Dialer = boundDialer(o.Dialer, bound)
	return redis.NewClient(&o)
}

// noMaintNotifications turns off go-redis's maintenance notifications
// (endpoints moving during a managed service's upgrade) for the library's
// own clients: they cost a command in every connection's handshake and
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

// A warmth sets up connections to one node in the background. A call that
// finds no idle connection dials one and runs its handshake (HELLO, CLIENT
// SETINFO: round trips of their own) under its own deadline plus the late
// window; on a slow link or in a starved process that may never be enough,
// and each failed handshake drops its connection. So after every call that
// got no answer, and beside the node's first call, one pipelined PING at a
// time runs under a budget of its own (four socketBounds; each read and
// write still within one): the connection it sets up stays pooled for the
// next batches. Close stops it (cut ends it at once) and waits for it.
type warmth struct {
	budget time.Duration
	first  atomic.Bool // the node's first call has started one
	mu     sync.Mutex
	busy   bool
	closed bool
	wg     sync.WaitGroup
}

func (w *warmth) start(rdb redis.UniversalClient) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.busy || w.closed {
		return
	}
	w.busy = true
	w.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), w.budget)
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
		w.mu.Lock()
		w.busy = false
		w.mu.Unlock()
	})
}

// stop refuses every later start.
func (w *warmth) stop() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}
