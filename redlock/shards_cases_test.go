package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/faultproxy"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// Issue 20 (b): shard 0's replica misses A's grants — its link is cut
// first — and is promoted with CLUSTER FAILOVER TAKEOVER in two of three
// members. The promoted processes have been up since the start, but they
// lack A's keys: B must not be granted them while A holds them.
//
// The promoted servers' slot owner records no longer name them (start.lua:
// served_ms): they sit out the guard. Were grants counted only once every
// replica has them (WAIT), A would obtain none of the keys instead, and
// the test accepts that too.
func TestShardsStaleReplicaPromoted(t *testing.T) {
	lab, clients, b, _ := shardedMembers(t, redislab.WithReplicas())
	ctx := ctxFor(t, time.Minute)
	for _, m := range lab.Members[:2] {
		if err := m.Shards[0].CutReplica(ctx); err != nil {
			t.Fatalf("CutReplica: %v", err)
		}
	}
	held, err := tryHoldOnShard(t, ctx, lab, clients, 0, 8)
	if len(held) == 0 {
		requireUncounted(t, err, 0, 1)
		return
	}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, m := range lab.Members[:2] {
		wg.Go(func() { errs[i] = m.Shards[0].Failover(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Failover: %v", err)
	}
	requireLacks(t, ctx, lab, 0, held, 0, 1)
	c := contendShards(t, ctx, lab, b, held, 1, 2)
	requireNoOverlap(t, c, "stale replicas were promoted in two of three members")
}

// requireUncounted fails t unless err is a failed acquisition in which no
// grant of the given members was counted.
func requireUncounted(t *testing.T, err error, members ...int) {
	t.Helper()
	votes := votesOf(t, err)
	for _, m := range members {
		if votes[m].Outcome == quorum.Granted {
			t.Errorf("member %d: a grant counted although its replica was cut off", m)
		}
	}
	t.Logf("A obtained no key, its grants on members %v not counted: %v", members, err)
}

// Issue 20 (c): a vouch covers every shard. TrustStart on each member's
// cluster client, on members just started; then a Client whose restart
// guard is far longer than their uptime counts only vouched processes, and
// must be granted a key on every shard. Vouching each primary through its
// own client must work as well ("quorumlock trust" given one node's
// address).
func TestShardsTrustStartCoversEveryShard(t *testing.T) {
	lab := redislab.StartShards(t, 3, 3)
	clients := lab.ClusterClients(t)
	ctx := ctxFor(t, 30*time.Second)
	for i, c := range clients {
		if err := redlock.TrustStart(ctx, c); err != nil {
			t.Fatalf("member %d: TrustStart: %v", i, err)
		}
	}
	c := newClient(t, clients, redlock.WithRestartGuard(time.Hour))
	for i, s := range lab.Members[0].Shards {
		key := s.Keys("vouched", 1)[0]
		l, err := c.TryLock(ctx, key)
		if err != nil {
			t.Errorf("shard %d: TryLock %s after TrustStart on every member: %v", i, key, err)
			continue
		}
		if err := l.Unlock(ctx); err != nil {
			t.Errorf("shard %d: Unlock: %v", i, err)
		}
	}
	t.Run("each primary's own client", func(t *testing.T) {
		for i, s := range lab.Members[0].Shards {
			p := redis.NewClient(&redis.Options{Addr: s.Primary().Addr()})
			err := redlock.TrustStart(ctx, p)
			p.Close()
			if err != nil {
				t.Errorf("shard %d: TrustStart on its primary's own client: %v", i, err)
			}
		}
	})
}

// Issue 20, item 4, the part New cannot see: two members that reach one
// cluster through seeds New cannot tell apart — cluster clients seeded with
// different nodes, or a plain client of one of its nodes beside a cluster
// client of it — are one member. New accepts them (it does not wait); the
// Client reads each member's cluster node IDs at first contact, and never
// counts that cluster twice: with the only other member down, no lock is
// granted, and once the Client has seen the two members' IDs, every
// acquisition fails with ErrSameCluster naming both.
func TestShardsOneClusterThroughDisjointSeeds(t *testing.T) {
	lab := redislab.StartShards(t, 2, 3)
	one, other := lab.Members[0], lab.Members[1]
	seeds := one.Seeds()
	cases := []struct {
		name  string
		twice redis.UniversalClient // the second way into the cluster of one
		key   string
	}{
		{"disjoint seeds", redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds[1:]}), "twice"},
		// A key of shard 1, which the plain client of its primary can grant.
		{"plain client of a node", redis.NewClient(&redis.Options{Addr: seeds[1]}), one.Shards[1].Keys("twice", 1)[0]},
	}
	ctx := ctxFor(t, time.Minute)
	for _, n := range other.Nodes() {
		if err := n.Kill(); err != nil {
			t.Fatalf("Kill: %v", err)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clients := []redis.UniversalClient{
				redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds[:1]}),
				tc.twice,
				redis.NewClusterClient(&redis.ClusterOptions{Addrs: other.Seeds(), MaxRetries: -1}),
			}
			for _, c := range clients {
				t.Cleanup(func() { c.Close() })
			}
			c := newClient(t, clients, redlock.WithRestartGuard(0))
			requireSameCluster(t, ctx, c, tc.key)
		})
	}
}

// requireSameCluster fails t if c, whose members 0 and 1 are one cluster
// and whose member 2 is down, is ever granted key, or if its attempts do
// not come to fail with ErrSameCluster naming members 0 and 1 (the first
// ones may fail for the time the cluster clients take to start).
func requireSameCluster(t *testing.T, ctx context.Context, c *redlock.Client, key string) {
	t.Helper()
	var last error
	testkit.Eventually(t, 20*time.Second, "an attempt fails with ErrSameCluster", func() bool {
		l, err := c.TryLock(ctx, key)
		if err == nil {
			t.Fatalf("TryLock granted %q (token %d) by one cluster counted as two members, with the only other member down", l.Key(), l.Token())
		}
		last = err
		return errors.Is(err, redlock.ErrSameCluster)
	})
	t.Logf("TryLock: %v", last)
	if !strings.Contains(last.Error(), "members 0 and 1") {
		t.Errorf("error %q does not name members 0 and 1", last)
	}
	if _, err := c.Lock(ctx, key); !errors.Is(err, redlock.ErrSameCluster) {
		t.Errorf("Lock after the cluster was found twice: %v, want ErrSameCluster", err)
	}
}

// Issue 20 (b) under the default guard: every member vouched for, so each
// primary counts at once; then shard 0's stale replica is promoted in two
// of three members. The promoted servers have served the slot for less
// than MaxRestartGuard: their grants wait for the TTL records of the
// third member, which holds A's keys — B must not get them while A holds
// them, and gets one once A's lease is over and the records allow.
func TestShardsStaleReplicaPromotedDefaultGuard(t *testing.T) {
	ctx := ctxFor(t, time.Minute)
	lab, clients := vouchedShards(t, ctx)
	b := newClient(t, clients, redlock.WithTTL(shardTTL), redlock.WithAutoRenew(false))
	onShard0(t, lab.Members[:2], "CutReplica", func(s *redislab.Shard) error { return s.CutReplica(ctx) })
	held := holdOnShard(t, ctx, lab, clients, 0, 4)
	onShard0(t, lab.Members[:2], "Failover", func(s *redislab.Shard) error { return s.Failover(ctx) })
	requireLacks(t, ctx, lab, 0, held, 0, 1)
	c := contendShards(t, ctx, lab, b, held, 1, 2)
	requireNoOverlap(t, c, "stale replicas were promoted in two of three members")
	for key := range held {
		l := eventuallyLocked(t, 2*shardTTL, "B is granted "+key+" once A's lease is over", func() (*redlock.Lock, error) {
			return b.TryLock(ctx, key)
		})
		_ = l.Unlock(ctx)
		break
	}
}

// The same, found only after a lock was granted: the plain client of one of
// the cluster's nodes is unreachable at first, so the lock is granted by
// the cluster through member 0 and by member 2. Once it is reachable and
// member 2 is down, the lock's extension must not be confirmed by the
// cluster counted twice (members 0 and 1); and every acquisition then
// fails with ErrSameCluster.
func TestShardsSameClusterFoundAfterGrant(t *testing.T) {
	lab := redislab.StartShards(t, 2, 3)
	one, other := lab.Members[0], lab.Members[1]
	proxy := faultproxy.Start(t, one.Shards[1].Primary().Addr())
	proxy.SetRefuse(true)
	clients := []redis.UniversalClient{
		redis.NewClusterClient(&redis.ClusterOptions{Addrs: one.Seeds()[:1]}),
		redis.NewClient(&redis.Options{Addr: proxy.Addr()}),
		redis.NewClusterClient(&redis.ClusterOptions{Addrs: other.Seeds(), MaxRetries: -1}),
	}
	for _, c := range clients {
		t.Cleanup(func() { c.Close() })
	}
	c := newClient(t, clients, redlock.WithRestartGuard(0), redlock.WithTTL(20*time.Second), redlock.WithAutoRenew(false))
	ctx := ctxFor(t, time.Minute)
	key := one.Shards[1].Keys("later", 1)[0]
	l := eventuallyLocked(t, 10*time.Second, "granted by members 0 and 2", func() (*redlock.Lock, error) {
		return c.TryLock(ctx, key)
	})
	proxy.SetRefuse(false)
	for _, n := range other.Nodes() {
		if err := n.Kill(); err != nil {
			t.Fatalf("Kill: %v", err)
		}
	}
	for i := range 3 {
		if err := l.Extend(ctx); err == nil {
			t.Fatalf("extension %d confirmed with member 2 down: one cluster counted as two members", i)
		} else {
			t.Logf("Extend: %v", err)
		}
	}
	requireSameCluster(t, ctx, c, key)
}
