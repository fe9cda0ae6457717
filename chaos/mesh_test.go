package chaos_test

import (
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/faultproxy"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A mesh gives each client its own fault proxy in front of each master, so
// that a fault may cut one client off from some masters while the others
// still reach them (a partition), or hit every client's path to a master
// (a slow or unreachable master).
type mesh struct {
	proxies [][]*faultproxy.Proxy // [client][node]
	clients []*redlock.Client     // as first made; see fresh
	opts    []redlock.Option      // given to every Client
}

// newMesh returns nClients independent clients over lab, each talking to
// every master through its own proxy. The redis clients keep the lab's
// timeouts (1 s): the library's node timeout must bound every call anyway.
func newMesh(t *testing.T, lab *redislab.Lab, nClients int, opts ...redlock.Option) *mesh {
	t.Helper()
	m := &mesh{opts: opts}
	for range nClients {
		proxies := make([]*faultproxy.Proxy, len(lab.Nodes))
		for i, node := range lab.Nodes {
			proxies[i] = faultproxy.Start(t, node.Addr())
		}
		rdbs := m.redisClients(proxies)
		for _, rdb := range rdbs {
			t.Cleanup(func() { rdb.Close() })
		}
		m.proxies = append(m.proxies, proxies)
		m.clients = append(m.clients, newClient(t, rdbs, opts...))
	}
	return m
}

// redisClients returns new redis clients, one through each proxy.
func (m *mesh) redisClients(proxies []*faultproxy.Proxy) []redis.UniversalClient {
	rdbs := make([]redis.UniversalClient, len(proxies))
	for i, p := range proxies {
		rdbs[i] = redis.NewClient(&redis.Options{Addr: p.Addr(),
			DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	}
	return rdbs
}

// fresh returns a brand-new Client for client c's paths to the masters (its
// proxies, so that its faults apply): new redis clients, nothing learnt of
// the masters — a process just started — and how to close it.
func (m *mesh) fresh(t *testing.T, c int) (*redlock.Client, func() error) {
	t.Helper()
	return freshClient(t, m.redisClients(m.proxies[c]), m.opts...)
}

// onNodes applies fault to every client's proxy in front of the given nodes.
func (m *mesh) onNodes(fault func(*faultproxy.Proxy), nodes ...int) {
	for _, proxies := range m.proxies {
		for _, n := range nodes {
			fault(proxies[n])
		}
	}
}

// reach partitions client c: it reaches only the given nodes, and every
// byte to or from the others is swallowed (a blackhole).
func (m *mesh) reach(c int, nodes ...int) {
	for n, p := range m.proxies[c] {
		p.SetBlackhole(!slices.Contains(nodes, n))
	}
}

// refuse makes client c's connections to the given nodes fail at once.
func (m *mesh) refuse(c int, nodes ...int) {
	for _, n := range nodes {
		m.proxies[c][n].SetRefuse(true)
	}
}

// heal clears every fault on every proxy.
func (m *mesh) heal() {
	for _, proxies := range m.proxies {
		for _, p := range proxies {
			p.SetLatency(0, 0)
			p.SetBlackhole(false)
			p.SetDropReplies(false)
			p.SetRefuse(false)
		}
	}
}

// contention returns holders over the mesh's clients on key "k".
func (m *mesh) contention(goroutines int, opts ...redlock.Option) *contention {
	return newContention(m.clients, goroutines, opts...)
}
