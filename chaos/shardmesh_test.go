package chaos_test

import (
	"context"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/faultproxy"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A shardMesh is the mesh of a sharded lab: each client reaches every node
// of every member — primaries and replicas, so that a promoted replica is
// reached the same way — through a fault proxy of its own. Its cluster
// clients dial the client's proxy in place of a node's address
// (ClusterOptions.Dialer), so the addresses the cluster announces (CLUSTER
// SLOTS, MOVED, ASK) stay the nodes' own.
type shardMesh struct {
	lab     *redislab.Sharded
	proxies []map[string]*faultproxy.Proxy // [client][node address]
	opts    []redlock.Option               // given to every Client
	stray   atomic.Int64                   // dials to an address with no proxy
}

// newShardMesh returns a mesh of nClients over lab and a Client per
// client, closed in Cleanup.
func newShardMesh(t *testing.T, lab *redislab.Sharded, nClients int, opts ...redlock.Option) (*shardMesh, []*redlock.Client) {
	t.Helper()
	m := &shardMesh{lab: lab, opts: opts}
	// Every client's proxies exist before the first Client: New starts
	// dialing at once (it reads the members' cluster IDs), through the
	// dialer, which reads m.proxies.
	for range nClients {
		proxies := map[string]*faultproxy.Proxy{}
		for _, mb := range lab.Members {
			for _, n := range mb.Nodes() {
				proxies[n.Addr()] = faultproxy.Start(t, n.Addr())
			}
		}
		m.proxies = append(m.proxies, proxies)
	}
	var clients []*redlock.Client
	for c := range nClients {
		rdbs := m.redisClients(c)
		for _, rdb := range rdbs {
			t.Cleanup(func() { rdb.Close() })
		}
		clients = append(clients, newClient(t, rdbs, opts...))
	}
	return m, clients
}

// redisClients returns new cluster clients, one per member, that reach the
// nodes through client c's proxies. The timeouts are the lab's (1 s): the
// library's node timeout bounds every call anyway.
func (m *shardMesh) redisClients(c int) []redis.UniversalClient {
	rdbs := make([]redis.UniversalClient, len(m.lab.Members))
	for i, mb := range m.lab.Members {
		rdbs[i] = redis.NewClusterClient(&redis.ClusterOptions{Addrs: mb.Seeds(), Dialer: m.dialer(c),
			DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	}
	return rdbs
}

// dialer returns a Dialer that connects to client c's proxy of a node
// instead of the node; an address with no proxy is dialled directly and
// counted (stray), for the soak to report.
func (m *shardMesh) dialer(c int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if p := m.proxies[c][addr]; p != nil {
			addr = p.Addr()
		} else {
			m.stray.Add(1)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

// fresh returns a brand-new Client for client c's paths (its proxies, so
// that its faults apply): new cluster clients, nothing learnt of the
// members — a process just started — and how to close it.
func (m *shardMesh) fresh(t *testing.T, c int) (*redlock.Client, func() error) {
	t.Helper()
	return freshClient(t, m.redisClients(c), m.opts...)
}

// onShard applies fault to every client's proxy in front of the current
// primary of shard in each given member.
func (m *shardMesh) onShard(fault func(*faultproxy.Proxy), shard int, members ...int) {
	for _, mb := range members {
		addr := m.lab.Members[mb].Shards[shard].Primary().Addr()
		for _, proxies := range m.proxies {
			fault(proxies[addr])
		}
	}
}

// heal clears every fault on every proxy.
func (m *shardMesh) heal() {
	for _, proxies := range m.proxies {
		for _, p := range proxies {
			p.SetLatency(0, 0)
			p.SetBlackhole(false)
		}
	}
}

// sameSlotKeys returns n names, prefix followed by a number, that share
// one hash slot in the shard's starting range: keys LockMany takes at once
// on cluster members.
func sameSlotKeys(s *redislab.Shard, prefix string, n int) []string {
	bySlot := map[int][]string{}
	for i := 0; ; i++ {
		k := prefix + strconv.Itoa(i)
		slot := redislab.Slot(k)
		if slot < s.First || slot > s.Last {
			continue
		}
		if bySlot[slot] = append(bySlot[slot], k); len(bySlot[slot]) == n {
			return bySlot[slot]
		}
	}
}
