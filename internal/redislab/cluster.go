package redislab

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterConfName is the cluster state file of a cluster node, kept in its
// data dir (redis-server resolves it against its dir).
const clusterConfName = "nodes.conf"

// clusterNodeTimeout is the cluster-node-timeout of a lab cluster node, in
// ms. A one-node cluster has no peer to time out; the setting also delays
// cluster_state:ok after the slots are assigned (the rejoin delay: the
// timeout, at least 500 ms, at most 5 s; 15 s by default, so 5 s).
const clusterNodeTimeout = "500"

// lastSlot is the highest of Redis Cluster's 16384 hash slots.
const lastSlot = 16383

// StartCluster returns a lab of n independent one-node Redis Clusters: local
// redis-server processes started with cluster mode on, each serving every
// hash slot itself, stopped in t.Cleanup. Talk to them through
// ClusterClients, as a service would to a cluster. They are always local
// processes (REDLOCK_ADDRS and Docker are not used: a container's cluster
// would announce its inner address), so they are Controllable — but an empty
// Restart clears nodes.conf with the rest of the data dir, and the node comes
// back serving no slot until ServeAllSlots. It skips t when redis-server is
// missing (fails it when CI=true).
func StartCluster(t testing.TB, n int, opts ...Option) *Lab {
	t.Helper()
	cfg := configure(t, "StartCluster", n, opts)
	cfg.cluster = true
	cfg.args = append([]string{"--cluster-enabled", "yes", "--cluster-config-file", clusterConfName,
		"--cluster-node-timeout", clusterNodeTimeout}, cfg.args...)
	lab := startLocal(t, n, &cfg)
	for i, node := range lab.Nodes {
		if err := node.ServeAllSlots(); err != nil {
			t.Fatalf("redislab: cluster node %d: %v", i+1, err)
		}
	}
	return lab
}

// ServeAllSlots assigns every hash slot to the node, a one-node cluster, and
// returns once CLUSTER INFO reports cluster_state:ok. Slots it already
// serves are not assigned again.
func (n *Node) ServeAllSlots() error {
	ctx, cancel := withTimeout()
	defer cancel()
	c := n.client()
	defer c.Close()
	if !clusterOK(ctx, c) {
		err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, lastSlot).Err()
		if err != nil && redis.HasErrorPrefix(err, "ERR unknown subcommand") {
			err = c.ClusterAddSlotsRange(ctx, 0, lastSlot).Err() // before Redis 7
		}
		if err != nil {
			return fmt.Errorf("redislab: assigning every slot to %s: %w", n.addr, err)
		}
	}
	deadline := time.Now().Add(startTimeout)
	for !clusterOK(ctx, c) {
		if time.Now().After(deadline) {
			info, err := c.ClusterInfo(ctx).Result()
			return fmt.Errorf("redislab: %s: no cluster_state:ok within %v: CLUSTER INFO = %q, %v", n.addr, startTimeout, info, err)
		}
		time.Sleep(pollInterval)
	}
	return nil
}

// clusterOK reports whether CLUSTER INFO says the cluster serves every slot.
func clusterOK(ctx context.Context, c *redis.Client) bool {
	info, err := c.ClusterInfo(ctx).Result()
	return err == nil && strings.Contains(info, "cluster_state:ok")
}

// ClusterClients returns one *redis.ClusterClient per node, in order, closed
// in t.Cleanup: each node as a cluster of its own, for a lab from
// StartCluster. The defaults of Clients (1 s dial, read and write timeouts)
// are applied first, then each tune function.
func (l *Lab) ClusterClients(t testing.TB, tune ...func(*redis.ClusterOptions)) []redis.UniversalClient {
	t.Helper()
	clients := make([]redis.UniversalClient, len(l.Nodes))
	for i, n := range l.Nodes {
		opt := &redis.ClusterOptions{
			Addrs:        []string{n.addr},
			DialTimeout:  time.Second,
			ReadTimeout:  time.Second,
			WriteTimeout: time.Second,
		}
		for _, f := range tune {
			f(opt)
		}
		c := redis.NewClusterClient(opt)
		t.Cleanup(func() {
			if err := c.Close(); err != nil && err != redis.ErrClosed {
				t.Errorf("redislab: closing cluster client of %s: %v", n.addr, err)
			}
		})
		clients[i] = c
	}
	return clients
}
