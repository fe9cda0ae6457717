package chaos_test

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
)

// rotateAfterTakeover leaves the promoted primary of shard in each given
// member without a replica — its replica, the old primary, cut off again
// (CutReplica) — and with repl-backlog-ttl 1: a second or two later it
// frees its backlog and rotates its master_replid (issue 25), well within
// the guard its slots sit out after the promotion. The returned heal
// counts the servers whose ID rotated, then resumes the replicas, which
// resync.
func (s *shardSoak) rotateAfterTakeover(ctx context.Context, shard int, members []int) (heal func()) {
	var promoted []*redislab.Node
	for _, i := range members {
		sh := s.lab.Members[i].Shards[shard]
		p := sh.Primary()
		if err := configSet(ctx, p, "repl-backlog-ttl", "1"); err != nil {
			s.t.Fatalf("sharded soak: member %d: %v", i, err)
		}
		if err := sh.CutReplica(ctx); err != nil {
			s.t.Fatalf("sharded soak: member %d: cutting the old primary off: %v", i, err)
		}
		promoted = append(promoted, p)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for k, p := range promoted {
			if rotated(ctx, p) {
				s.rotated++
			}
			if err := s.lab.Members[members[k]].Shards[shard].Replica().Resume(); err != nil {
				s.t.Errorf("sharded soak: resuming a replica: %v", err)
			}
		}
	}
}

// configSet sets a configuration parameter of n's server.
func configSet(ctx context.Context, n *redislab.Node, param, value string) error {
	c := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer c.Close()
	return c.ConfigSet(ctx, param, value).Err()
}

// rotated reports whether n's server has a replication ID and no second
// one (second_repl_offset -1): it rotated its ID since its promotion.
func rotated(ctx context.Context, n *redislab.Node) bool {
	c := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer c.Close()
	info, err := c.Info(ctx, "replication").Result()
	return err == nil && strings.Contains(info, "second_repl_offset:-1\r\n")
}
