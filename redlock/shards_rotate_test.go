package redlock_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// rotateTTL is A's lease in the rotation test: long enough that the
// promoted replicas rotate their replication IDs well within it, and that
// their processes have by then been up for longer than the guard.
const rotateTTL = 12 * time.Second

// Issue 25: shard 0's replica misses A's grants and is promoted
// (TAKEOVER) in two of three members, its old primary dead, so that it
// has no replica of its own; with repl-backlog-ttl 1 it frees its backlog
// a second or two later and rotates its master_replid (second_repl_offset
// back to -1). The slot's start must survive the rotation: B, under the
// default guard, must never be granted A's keys while A holds them.
// Before the fix the promoted servers counted from their process's start
// once the ID rotated, and B was granted the keys within A's lease.
func TestShardsPromotedReplicaRotatesReplID(t *testing.T) {
	ctx := ctxFor(t, 2*time.Minute)
	lab, clients := patientlyVouchedShards(t, ctx)
	members := lab.Members[:2]
	// The replicas' processes must be up for a while before A's grant, so
	// that counting from their start would admit them within A's lease.
	for _, m := range members {
		waitUptime(t, ctx, m.Shards[0].Replica(), 5*time.Second)
	}
	onShard0(t, members, "CutReplica", func(s *redislab.Shard) error { return s.CutReplica(ctx) })
	held := holdOnShardFor(t, ctx, lab, clients, 0, 4, rotateTTL)
	onShard0(t, members, "Kill", func(s *redislab.Shard) error { return s.Primary().Kill() })
	onShard0(t, members, "Failover", func(s *redislab.Shard) error { return s.Failover(ctx) })
	requireLacks(t, ctx, lab, 0, held, 0, 1)
	b := newClient(t, clients, redlock.WithTTL(shardTTL), redlock.WithAutoRenew(false))
	// B's attempts reach the promoted servers, which record that they
	// serve the slot since now; only then do their IDs rotate.
	for key, a := range held {
		for _, m := range members {
			promoted := m.Shards[0].Primary()
			eventually(t, 10*time.Second, "the promoted server records its slot", func() bool {
				if l, err := b.TryLock(ctx, key); err == nil {
					if a.Err() == nil && time.Now().Before(a.Until()) {
						t.Fatalf("B granted %s while A holds it, before any rotation", key)
					}
					_ = l.Unlock(ctx)
				}
				return ownerRecordNames(t, ctx, promoted, key)
			})
			rotateReplID(t, ctx, promoted)
		}
		break
	}
	c := contendShards(t, ctx, lab, b, held, 1, 2)
	requireNoOverlap(t, c, "promoted replicas rotated their replication IDs")
}

// holdOnShardFor is holdOnShard with A's TTL ttl.
func holdOnShardFor(t *testing.T, ctx context.Context, lab *redislab.Sharded, clients []redis.UniversalClient, shard, n int, ttl time.Duration) map[string]*redlock.Lock {
	t.Helper()
	a := newClient(t, clients, redlock.WithTTL(ttl), redlock.WithAutoRenew(false), redlock.WithRestartGuard(0))
	held := map[string]*redlock.Lock{}
	for _, key := range lab.Members[0].Shards[shard].Keys("held", n) {
		l, err := a.TryLock(ctx, key)
		if err != nil {
			t.Fatalf("A: TryLock %s: %v", key, err)
		}
		held[key] = l
	}
	awaitLanded(ctx, lab, shard, held)
	return held
}

// ownerRecordNames reports whether n's owner record of key's slot names n.
func ownerRecordNames(t *testing.T, ctx context.Context, n *redislab.Node, key string) bool {
	t.Helper()
	id, err := n.ID(ctx)
	if err != nil {
		t.Fatalf("%s: CLUSTER MYID: %v", n.Addr(), err)
	}
	c := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer c.Close()
	rec := "quorumlock:slot-owner" + strings.TrimPrefix(redlock.TrustKeyFor(key), redlock.TrustKey)
	by, err := c.HGet(ctx, rec, "by").Result()
	return err == nil && by == id
}

// infoInt reads field of INFO section on n's server.
func infoInt(ctx context.Context, n *redislab.Node, section, field string) (int64, error) {
	c := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer c.Close()
	info, err := c.Info(ctx, section).Result()
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, nil
}

// waitUptime waits until n's server has been up for d.
func waitUptime(t *testing.T, ctx context.Context, n *redislab.Node, d time.Duration) {
	t.Helper()
	eventually(t, d+10*time.Second, "the server is up for "+d.String(), func() bool {
		up, err := infoInt(ctx, n, "server", "uptime_in_seconds")
		return err == nil && time.Duration(up)*time.Second >= d
	})
}

// rotateReplID makes n, a primary with no replica, free its replication
// backlog after a second (repl-backlog-ttl 1), and waits until it has
// rotated its master_replid: second_repl_offset is back to -1.
func rotateReplID(t *testing.T, ctx context.Context, n *redislab.Node) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer c.Close()
	if err := c.ConfigSet(ctx, "repl-backlog-ttl", "1").Err(); err != nil {
		t.Fatalf("%s: CONFIG SET repl-backlog-ttl 1: %v", n.Addr(), err)
	}
	eventually(t, 10*time.Second, n.Addr()+" rotates its replication ID", func() bool {
		off, err := infoInt(ctx, n, "replication", "second_repl_offset")
		return err == nil && off == -1
	})
}

// patientlyVouchedShards is vouchedShards whose TrustStart waits for each
// pipeline of records as long as a loaded machine needs.
func patientlyVouchedShards(t *testing.T, ctx context.Context) (*redislab.Sharded, []redis.UniversalClient) {
	t.Helper()
	lab := redislab.StartShards(t, 3, 3, redislab.WithReplicas())
	patient := lab.ClusterClients(t, func(o *redis.ClusterOptions) { o.ReadTimeout, o.WriteTimeout = 30*time.Second, 30*time.Second })
	for i, c := range patient {
		if err := redlock.TrustStart(ctx, c); err != nil {
			t.Fatalf("member %d: TrustStart: %v", i, err)
		}
	}
	return lab, lab.ClusterClients(t)
}
