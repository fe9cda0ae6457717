package chaos_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// staleTTL is the lease of staleHold: unrenewed, it must outlive the
// promotion and the rotation of the replication IDs that follows.
const staleTTL = 4 * shardSoakTTL

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

// staleHold makes the rotation bite (issue 25): the soak's holders renew
// their leases, and a renewal repairs a lease on a promoted server before
// its ID rotates. So a brand-new key of shard, cut off from its replicas,
// is locked unrenewed for staleTTL by a Client of its own with the default
// restart guard (the soak's WithRestartGuard is shorter than staleTTL),
// and a rival Client with the default guard and the soak's TTL tries it
// again and again until the lease is over; every hold is recorded. The
// returned stop waits for both and closes them.
func (s *shardSoak) staleHold(shard int) (stop func()) {
	key := s.lab.Members[0].Shards[shard].Keys(fmt.Sprintf("stale%d-", len(s.episodes)), 1)[0]
	open := func(opts ...redlock.Option) *redlock.Client {
		c, err := redlock.New(s.lab.ClusterClients(s.t), append([]redlock.Option{redlock.WithNodeTimeout(shardSoakTimeout)}, opts...)...)
		if err != nil {
			s.t.Fatalf("sharded soak: stale hold: New: %v", err)
		}
		return c
	}
	holder, rival := open(redlock.WithTTL(staleTTL), redlock.WithAutoRenew(false)), open(redlock.WithTTL(shardSoakTTL))
	ctx, cancel := context.WithTimeout(context.Background(), attemptWait)
	l, err := holder.Lock(ctx, key)
	cancel()
	if err != nil {
		holder.Close()
		rival.Close()
		return func() {}
	}
	s.staleHolds++
	ctx, cancel = context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		s.rec.Hold(ctx, "stale", l, func(ctx context.Context) { pause(ctx, time.Until(l.Until())) })
	})
	wg.Go(func() {
		for time.Now().Before(l.Until()) && ctx.Err() == nil {
			if got, err := rival.TryLock(ctx, key, redlock.WithAutoRenew(false)); err == nil {
				s.staleGrants.Add(1)
				s.rec.Hold(ctx, "stale-rival", got, func(context.Context) {})
			}
			pause(ctx, tryPace)
		}
	})
	return func() { wg.Wait(); cancel(); holder.Close(); rival.Close() }
}
