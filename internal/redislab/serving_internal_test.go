package redislab

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A member is formed (serving, the end of StartShards) only once every
// node knows who serves every slot: here a node forgot one slot (DELSLOTS
// on it alone), as a node of a member just formed has not yet heard of the
// other primaries' slots, until gossip tells it. cluster_state:ok alone
// said nothing of it: that node answered CLUSTERDOWN Hash slot not served.
func TestServingWaitsUntilEveryNodeKnowsEverySlot(t *testing.T) {
	t.Parallel()
	lab := StartShards(t, 1, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m := lab.Members[0]
	key := m.Shards[1].Keys("k", 1)[0]
	c := redis.NewClient(&redis.Options{Addr: m.Shards[0].Primary().Addr(), MaxRetries: -1})
	defer c.Close()
	if err := c.Do(ctx, "CLUSTER", "DELSLOTS", Slot(key)).Err(); err != nil {
		t.Fatalf("CLUSTER DELSLOTS: %v", err)
	}
	if err := m.serving(ctx); err != nil {
		t.Fatalf("serving: %v", err)
	}
	if err := c.Get(ctx, key).Err(); err == nil || !strings.HasPrefix(err.Error(), "MOVED ") {
		t.Errorf("GET %s of another shard on shard 0 once serving: %v, want MOVED", key, err)
	}
}
