package redislab

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
)

// A Sharded lab is a set of independent Redis Clusters — the members of a
// quorum — each made of several shards (StartShards). Members is in start
// order and must not be modified.
type Sharded struct {
	Members []*Member
}

// A Member is one Redis Cluster of a Sharded lab: a quorum member. Shards
// is in slot order and must not be modified.
type Member struct {
	Shards []*Shard
}

// A Shard is a primary serving a fixed range of hash slots at the start,
// and optionally its replica. Failover swaps the two; MoveSlot moves slots
// but does not change First and Last. Its methods are safe for concurrent
// use.
type Shard struct {
	First, Last int // the slots the shard was started with, inclusive

	member           *Member
	mu               sync.Mutex
	primary, replica *Node // replica nil without WithReplicas
	cut              bool  // CutReplica cut the replica off; Failover undoes it
}

// shardNodeTimeout is the cluster-node-timeout of a sharded lab, in ms:
// long enough that a node is not flagged failing because a loaded
// two-core machine starved it for a moment, short enough that a paused or
// killed primary is flagged within a test.
const shardNodeTimeout = "1000"

// joinTimeout bounds the forming of one member, and each wait of a
// failover or slot move.
const joinTimeout = 15 * time.Second

// WithReplicas gives every shard of StartShards one replica. Replicas never
// fail over by themselves (cluster-replica-no-failover yes): only
// Shard.Failover promotes one, so a test decides when.
func WithReplicas() Option {
	return func(c *config) { c.replicas = true }
}

// StartShards returns a lab of members independent Redis Clusters of shards
// primaries each (plus a replica each, WithReplicas): local redis-server
// processes on loopback, stopped in t.Cleanup, every member formed and
// reporting cluster_state:ok. All processes start in parallel, and the
// members form in parallel.
//
// Each member's nodes get distinct config epochs before they meet (a
// takeover is then never held up by an epoch collision) and cluster bus
// ports below the ephemeral range. Replicas sync without delay
// (repl-diskless-sync-delay 0). cluster-require-full-coverage is off, so a
// shard that is down leaves its member's other shards serving. An empty
// Restart of a shard's node keeps nodes.conf — the node keeps its identity
// and slots and loses its keys, as a primary without persistence does —
// and the node answers CLUSTERDOWN for about two seconds after any restart.
//
// It skips t when redis-server is missing (fails it when CI=true).
func StartShards(t testing.TB, members, shards int, opts ...Option) *Sharded {
	t.Helper()
	cfg := configure(t, "StartShards", members*shards, opts)
	if shards < 1 || shards > lastSlot+1 {
		t.Fatalf("redislab: StartShards needs 1 to %d shards, got %d", lastSlot+1, shards)
	}
	cfg.cluster, cfg.keepClusterConf = true, true
	cfg.args = append([]string{"--cluster-enabled", "yes", "--cluster-config-file", clusterConfName,
		"--cluster-node-timeout", shardNodeTimeout, "--cluster-require-full-coverage", "no",
		"--cluster-replica-no-failover", "yes", "--repl-diskless-sync-delay", "0"}, cfg.args...)
	per := shards
	if cfg.replicas {
		per *= 2
	}
	lab := startLocal(t, members*per, &cfg)
	s := &Sharded{Members: make([]*Member, members)}
	for i := range s.Members {
		s.Members[i] = newMember(lab.Nodes[i*per:(i+1)*per], shards, cfg.replicas)
	}
	g, ctx := errgroup.WithContext(context.Background())
	for i, m := range s.Members {
		g.Go(func() error {
			if err := m.join(ctx); err != nil {
				return fmt.Errorf("member %d: %w\n%s", i, err, m.logs())
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("redislab: StartShards: %v", err)
	}
	return s
}

// newMember splits a member's nodes into shards: the first shards nodes are
// the primaries, the rest their replicas, in order.
func newMember(nodes []*Node, shards int, replicas bool) *Member {
	m := &Member{Shards: make([]*Shard, shards)}
	for i := range m.Shards {
		sh := &Shard{First: i * (lastSlot + 1) / shards, Last: (i+1)*(lastSlot+1)/shards - 1, member: m, primary: nodes[i]}
		if replicas {
			sh.replica = nodes[shards+i]
		}
		m.Shards[i] = sh
	}
	return m
}

// Primary returns the shard's current primary.
func (s *Shard) Primary() *Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.primary
}

// Replica returns the shard's current replica, nil without WithReplicas.
func (s *Shard) Replica() *Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replica
}

// Nodes returns every node of the member: primaries, then replicas.
func (m *Member) Nodes() []*Node {
	var nodes, replicas []*Node
	for _, s := range m.Shards {
		nodes = append(nodes, s.Primary())
		if r := s.Replica(); r != nil {
			replicas = append(replicas, r)
		}
	}
	return append(nodes, replicas...)
}

// Seeds returns the addresses of the member's current primaries: the Addrs
// of a ClusterClient for it.
func (m *Member) Seeds() []string {
	seeds := make([]string, len(m.Shards))
	for i, s := range m.Shards {
		seeds[i] = s.Primary().Addr()
	}
	return seeds
}

// ShardOf returns the shard that was started with slot (First..Last).
func (m *Member) ShardOf(slot int) *Shard {
	for _, s := range m.Shards {
		if slot >= s.First && slot <= s.Last {
			return s
		}
	}
	return nil
}

// ClusterClients returns one *redis.ClusterClient per member, in order,
// seeded with the member's primaries and closed in t.Cleanup. The defaults
// of Clients (1 s dial, read and write timeouts) are applied first, then
// each tune function.
func (s *Sharded) ClusterClients(t testing.TB, tune ...func(*redis.ClusterOptions)) []redis.UniversalClient {
	t.Helper()
	clients := make([]redis.UniversalClient, len(s.Members))
	for i, m := range s.Members {
		opt := &redis.ClusterOptions{Addrs: m.Seeds(), DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second}
		for _, f := range tune {
			f(opt)
		}
		c := redis.NewClusterClient(opt)
		t.Cleanup(func() {
			if err := c.Close(); err != nil && err != redis.ErrClosed {
				t.Errorf("redislab: closing cluster client of member %d: %v", i, err)
			}
		})
		clients[i] = c
	}
	return clients
}

// logs returns the tail of each of the member's logs, for a failed start.
func (m *Member) logs() string {
	var out string
	for _, n := range m.Nodes() {
		out += fmt.Sprintf("--- %s ---\n%s\n", n.Addr(), readFrom(filepath.Join(n.local.dir, logName), 0))
	}
	return out
}

// ID returns the node's cluster node ID (CLUSTER MYID).
func (n *Node) ID(ctx context.Context) (string, error) {
	c := n.client()
	defer c.Close()
	id, err := c.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return "", fmt.Errorf("redislab: CLUSTER MYID on %s: %w", n.addr, err)
	}
	return id, nil
}

// busPort returns the node's cluster bus port.
func (n *Node) busPort() string {
	n.local.mu.Lock()
	defer n.local.mu.Unlock()
	return strconv.Itoa(n.local.bus)
}

// Holds reports whether the node itself holds key: asked of the node alone,
// after READONLY, so that a replica answers from its own data instead of
// redirecting, and a primary that lost the slot says what it still has.
func (n *Node) Holds(ctx context.Context, key string) (bool, error) {
	c := n.client()
	defer c.Close()
	conn := c.Conn()
	defer conn.Close()
	if err := conn.ReadOnly(ctx).Err(); err != nil {
		return false, fmt.Errorf("redislab: READONLY on %s: %w", n.addr, err)
	}
	got, err := conn.Exists(ctx, key).Result()
	if err != nil {
		return false, fmt.Errorf("redislab: EXISTS %s on %s: %w", key, n.addr, err)
	}
	return got == 1, nil
}
