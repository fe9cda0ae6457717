package redislab_test

import (
	"strings"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// Each node of StartCluster is a cluster of its own that serves every slot:
// keys of any slot work through a cluster client, a command over two slots
// is refused as on any cluster, and the nodes share no data.
func TestStartClusterServesEverySlot(t *testing.T) {
	t.Parallel()
	lab := redislab.StartCluster(t, 2)
	ctx := testkit.Context(t, 10*time.Second)
	clients := lab.ClusterClients(t)
	for i, c := range clients {
		info, err := c.ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_assigned:16384") {
			t.Fatalf("node %d: CLUSTER INFO = %q, %v; want cluster_state:ok with 16384 slots", i, info, err)
		}
		for _, k := range []string{"a", "b", "{tag}x"} { // slots 15495, 3300, 8338
			if err := c.Set(ctx, k, i, 0).Err(); err != nil {
				t.Fatalf("node %d: SET %s: %v", i, k, err)
			}
		}
		err = c.Do(ctx, "MSET", "a", 1, "b", 2).Err()
		if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
			t.Errorf("node %d: MSET over two slots: err = %v, want CROSSSLOT", i, err)
		}
	}
	for i, c := range clients {
		if got, err := c.Get(ctx, "a").Int(); err != nil || got != i {
			t.Errorf("node %d: GET a = %d, %v; want %d (independent nodes)", i, got, err, i)
		}
	}
}

// An empty restart clears nodes.conf: the node serves no slot until
// ServeAllSlots; a restart that keeps the data dir keeps the slots.
func TestClusterNodeRestart(t *testing.T) {
	t.Parallel()
	lab := redislab.StartCluster(t, 1)
	node := lab.Nodes[0]
	c := lab.Clients(t, bounded)[0] // a plain client: CLUSTER INFO of this node alone
	ctx := testkit.Context(t, 20*time.Second)
	state := func() string {
		t.Helper()
		info, err := c.ClusterInfo(ctx).Result()
		if err != nil {
			t.Fatalf("CLUSTER INFO: %v", err)
		}
		for line := range strings.Lines(info) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cluster_state:"); ok {
				return v
			}
		}
		t.Fatalf("CLUSTER INFO has no cluster_state: %q", info)
		return ""
	}
	if err := node.Restart(false); err != nil {
		t.Fatalf("Restart(false): %v", err)
	}
	testkit.Eventually(t, 5*time.Second, "cluster_state:ok after a restart with nodes.conf", func() bool { return state() == "ok" })
	if err := node.Restart(true); err != nil {
		t.Fatalf("Restart(true): %v", err)
	}
	if got := state(); got != "fail" {
		t.Fatalf("cluster_state after an empty restart = %s, want fail (no slot served)", got)
	}
	if err := node.ServeAllSlots(); err != nil {
		t.Fatalf("ServeAllSlots: %v", err)
	}
	if got := state(); got != "ok" {
		t.Errorf("cluster_state after ServeAllSlots = %s, want ok", got)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Errorf("SET after ServeAllSlots: %v", err)
	}
}
