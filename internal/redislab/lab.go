// Package redislab starts real Redis masters for tests: the independent nodes
// a Redlock quorum is made of.
//
// Start picks its servers, in this order:
//
//  1. REDLOCK_ADDRS (comma-separated host:port): an existing lab, such as the
//     repository's docker-compose.yml. Its nodes are flushed at Start and are
//     not controllable. Ignored when WithArgs or WithWrapper is given, since
//     the lab cannot apply settings to servers it did not start.
//  2. Local redis-server processes on free loopback ports, each with its own
//     data dir; the only controllable nodes (Kill, Restart, Pause, Resume).
//
// Containers are not started here: testcontainers-go and the Docker client
// would enter the root go.mod, and so every user's module graph. The
// container checks live in the lab module (directory lab/).
//
// All nodes run with the embedded redis.conf (Conf). When no server can be
// had, Start skips the test, or fails it when CI=true.
//
// StartCluster starts one-node Redis Clusters, and StartShards quorum
// members that are Redis Clusters of several shards, optionally with a
// replica each, with the faults a sharded member meets: a shard killed or
// restarted empty, a failover to a replica that missed writes, a slot
// moved (docs/SHARDS.md). Both are always local processes.
package redislab

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Conf is the content of redis.conf: the settings of every lab node, shared
// with the repository's docker-compose.yml.
//
//go:embed redis.conf
var Conf string

// Environment variables that steer Start.
const (
	envAddrs = "REDLOCK_ADDRS"
	envCI    = "CI"
)

// A Lab is a set of independent Redis masters started for one test. Nodes
// is in start order and must not be modified.
type Lab struct {
	Nodes []*Node

	external bool // the nodes are REDLOCK_ADDRS's, not started for the test
}

// An Option changes how Start runs its servers.
type Option func(*config)

type config struct {
	args    []string // extra redis-server arguments, after the lab's own
	wrapper []string // command that runs redis-server, local processes only

	cluster         bool // cluster nodes: each gets a cluster bus port (--cluster-port)
	keepClusterConf bool // an empty restart keeps nodes.conf (StartShards)
	replicas        bool // StartShards: one replica per shard (WithReplicas)
}

// WithArgs adds redis-server command-line arguments, such as "--appendfsync",
// "no". They come after the lab's own, so they override redis.conf.
func WithArgs(args ...string) Option {
	return func(c *config) { c.args = append(c.args, args...) }
}

// WithWrapper runs each redis-server under a wrapper command, such as
// "faketime", "-f", "+0 x1.05". The lab then starts local processes only,
// and signals reach the wrapper's children too (each node is a process group).
//
// Beware: libfaketime hangs a redis-server linked with jemalloc, as Debian's
// is ("Unexpected recursive calls to clock_gettime()", wolfcw/libfaketime#130);
// Start then fails after its 5 s wait, with that message in the log.
func WithWrapper(cmd ...string) Option {
	return func(c *config) { c.wrapper = slices.Clone(cmd) }
}

// Start returns a lab of n independent masters that answer PING, stopped in
// t.Cleanup. It skips t when no server can be had (fails it when CI=true),
// and fails t when a server does not start.
func Start(t testing.TB, n int, opts ...Option) *Lab {
	t.Helper()
	cfg := configure(t, "Start", n, opts)
	custom := len(cfg.args) > 0 || len(cfg.wrapper) > 0
	if addrs := os.Getenv(envAddrs); addrs != "" && !custom {
		return startExternal(t, n, addrs)
	}
	return startLocal(t, n, &cfg)
}

// configure applies opts for a lab of n nodes started by caller, failing t
// when n is not positive.
func configure(t testing.TB, caller string, n int, opts []Option) config {
	t.Helper()
	if n < 1 {
		t.Fatalf("redislab: %s needs at least one node, got %d", caller, n)
	}
	var cfg config
	for _, opt := range opts {
		opt(&cfg)
	}
	return cfg
}

// unavailable skips t, or fails it when CI=true: a missing server in CI is
// a broken set-up, never a reason to pass.
func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv(envCI) == "true" {
		t.Fatalf("redislab: %s (CI=true, so this is a failure)", why)
	}
	hint := "or set " + envAddrs + " to a running lab"
	if os.Getenv(envAddrs) != "" { // set, yet this test starts its own servers
		hint = "this test starts its own servers, " + envAddrs + " or not"
	}
	t.Skipf("redislab: %s; install redis-server (Debian: apt-get install -y redis-server); %s", why, hint)
}

// Addrs returns the host:port of every node, in order.
func (l *Lab) Addrs() []string {
	addrs := make([]string, len(l.Nodes))
	for i, n := range l.Nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Clients returns one *redis.Client per node, in order, closed in t.Cleanup.
// The defaults (1 s dial, read and write timeouts; go-redis defaults
// otherwise) are applied first, then each tune function.
func (l *Lab) Clients(t testing.TB, tune ...func(*redis.Options)) []redis.UniversalClient {
	t.Helper()
	clients := make([]redis.UniversalClient, len(l.Nodes))
	for i, n := range l.Nodes {
		opt := n.options()
		for _, f := range tune {
			f(opt)
		}
		c := redis.NewClient(opt)
		t.Cleanup(func() { closeClient(t, c) })
		clients[i] = c
	}
	return clients
}

// closeClient closes c, tolerating a client the test closed itself.
func closeClient(t testing.TB, c *redis.Client) {
	if err := c.Close(); err != nil && err != redis.ErrClosed {
		t.Errorf("redislab: closing client of %s: %v", c.Options().Addr, err)
	}
}

// RequireControl skips t unless every node is Controllable. On a lab of
// REDLOCK_ADDRS masters it skips t even when CI=true — a run pointed at an
// outside lab chose masters no test can kill; any other lab of nodes out
// of control fails t when CI=true, so that fault tests never pass by not
// running.
func (l *Lab) RequireControl(t testing.TB) {
	t.Helper()
	l.RequireOwn(t)
	for _, n := range l.Nodes {
		if !n.Controllable() {
			unavailable(t, fmt.Sprintf("node %s is not a local process the lab controls", n.Addr()))
		}
	}
}

// RequireOwn skips t when the lab is the outside one REDLOCK_ADDRS names
// (even when CI=true): t needs masters it started itself — just started,
// never vouched for, or killable — which an outside lab's are not.
func (l *Lab) RequireOwn(t testing.TB) {
	t.Helper()
	if l.external {
		t.Skipf("redislab: %s points at an outside lab; this test needs masters it starts itself "+
			"(unset %s to run it on local redis-server processes)", envAddrs, envAddrs)
	}
}

// FlushAll deletes every key on every node, failing t on any error.
func (l *Lab) FlushAll(t testing.TB) {
	t.Helper()
	for _, n := range l.Nodes {
		if err := n.flushAll(); err != nil {
			t.Fatalf("redislab: FLUSHALL on %s: %v", n.Addr(), err)
		}
	}
}

// splitAddrs parses a comma-separated address list, dropping blanks.
func splitAddrs(s string) []string {
	var addrs []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// startExternal uses the first n addresses of REDLOCK_ADDRS, flushed.
func startExternal(t testing.TB, n int, raw string) *Lab {
	t.Helper()
	addrs := splitAddrs(raw)
	if len(addrs) < n {
		t.Fatalf("redislab: %s has %d addresses, the test needs %d", envAddrs, len(addrs), n)
	}
	lab := &Lab{Nodes: make([]*Node, n), external: true}
	for i, a := range addrs[:n] {
		lab.Nodes[i] = &Node{addr: a}
		if err := waitPing(a, nil, startTimeout); err != nil {
			t.Fatalf("redislab: %s node: %v", envAddrs, err)
		}
	}
	lab.FlushAll(t)
	return lab
}

// startTimeout bounds every wait for a node to answer or to go away.
const startTimeout = 5 * time.Second

// requestTimeout bounds the lab's own commands (FLUSHALL, INFO).
const requestTimeout = 5 * time.Second

// withTimeout returns a context for one lab command.
func withTimeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), requestTimeout)
}

// Trust calls vouch — redlock.TrustStart — on every node, failing t on any
// error: the lab's masters are new, so no lease can be lost by their start,
// and Clients need not wait out the restart guard before counting them.
// Call it once after Start, never after a Restart: a restarted node is what
// the guard is for.
func (l *Lab) Trust(t testing.TB, vouch func(context.Context, redis.UniversalClient) error) {
	t.Helper()
	for _, n := range l.Nodes {
		ctx, cancel := withTimeout()
		c := n.client()
		err := vouch(ctx, c)
		c.Close()
		cancel()
		if err != nil {
			t.Fatalf("redislab: vouching for %s: %v", n.Addr(), err)
		}
	}
}
