package redislab_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// StartShards returns members that serve at once: every node, asked right
// away, counts every slot as served and sees the same slot map. A node
// reports cluster_state:ok before gossip told it the others' slots; a
// client that loaded its map from it got CLUSTERDOWN Hash slot not served.
func TestStartShardsServesEverySlotAtOnce(t *testing.T) {
	t.Parallel()
	lab := redislab.StartShards(t, 2, 3)
	ctx := testkit.Context(t, 20*time.Second)
	for i, m := range lab.Members {
		var first string
		for _, n := range m.Nodes() {
			c := nodeClient(t, n)
			info, err := c.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_slots_ok:16384\r\n") {
				t.Errorf("member %d: node %s: CLUSTER INFO = %q, %v; want every slot served", i, n.Addr(), info, err)
			}
			shards, err := c.ClusterShards(ctx).Result()
			if err != nil {
				t.Fatalf("member %d: CLUSTER SHARDS on %s: %v", i, n.Addr(), err)
			}
			var view []string
			for _, sh := range shards {
				for _, r := range sh.Slots {
					for _, nd := range sh.Nodes {
						if nd.Role == "master" {
							view = append(view, fmt.Sprintf("%05d-%05d %s:%d", r.Start, r.End, nd.IP, nd.Port))
						}
					}
				}
			}
			slices.Sort(view)
			if got := strings.Join(view, ", "); first == "" {
				first = got
			} else if got != first {
				t.Errorf("member %d: node %s maps the slots as %s; another node as %s", i, n.Addr(), got, first)
			}
		}
	}
	// And a client of each member reaches every shard.
	for i, c := range lab.ClusterClients(t) {
		for _, s := range lab.Members[i].Shards {
			if err := c.Set(ctx, s.Keys("first", 1)[0], "v", 0).Err(); err != nil {
				t.Errorf("member %d: first SET on the shard of slots %d-%d: %v", i, s.First, s.Last, err)
			}
		}
	}
}

// A Failover without a cut keeps every write the primary acknowledged,
// however recent: it waits for the replica to catch up before the
// takeover. Many writes just before it leave the replica behind.
func TestShardFailoverKeepsEveryWrite(t *testing.T) {
	t.Parallel()
	lab := redislab.StartShards(t, 1, 2, redislab.WithReplicas())
	ctx := testkit.Context(t, 30*time.Second)
	s := lab.Members[0].Shards[0]
	// A bound for the writes on a loaded machine, not the 1 s of nodeClient.
	old := redis.NewClient(&redis.Options{Addr: s.Primary().Addr(), ReadTimeout: 20 * time.Second, WriteTimeout: 20 * time.Second})
	t.Cleanup(func() { old.Close() })
	const n = 20000
	pipe := old.Pipeline()
	tag := s.Keys("w", 1)[0] // every key in its slot, on the shard
	for i := range n {
		pipe.Set(ctx, fmt.Sprintf("{%s}-%d", tag, i), strings.Repeat("v", 100), 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("%d SETs on the primary: %v", n, err)
	}
	if err := s.Failover(ctx); err != nil {
		t.Fatalf("Failover: %v", err)
	}
	if got, err := nodeClient(t, s.Primary()).DBSize(ctx).Result(); err != nil || got != n {
		t.Errorf("the promoted replica holds %d keys, %v; want the %d the primary acknowledged", got, err, n)
	}
}
