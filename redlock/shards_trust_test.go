package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// Issue 20, item 2: CheckNew on a member's cluster client surveys every
// primary. A lock held on one shard shows the member in use, whichever
// node a keyless command of the cluster client would reach; every primary
// vouched for makes the member vouched.
func TestShardsCheckNewCoversEveryPrimary(t *testing.T) {
	lab := redislab.StartShards(t, 1, 3)
	clients := lab.ClusterClients(t)
	ctx := ctxFor(t, 30*time.Second)
	if err := redlock.CheckNew(ctx, clients, redlock.DefaultPrefix)[0]; err != nil {
		t.Fatalf("CheckNew on a new cluster: %v, want nil", err)
	}
	c := newClient(t, clients, redlock.WithRestartGuard(0), redlock.WithTTL(time.Minute), redlock.WithAutoRenew(false))
	key := lab.Members[0].Shards[2].Keys("inuse", 1)[0]
	l, err := c.TryLock(ctx, key)
	if err != nil {
		t.Fatalf("TryLock %s: %v", key, err)
	}
	missed := 0
	for range 6 {
		if err := redlock.CheckNew(ctx, clients, redlock.DefaultPrefix)[0]; !errors.Is(err, redlock.ErrInUse) {
			missed++
		}
	}
	if missed > 0 {
		t.Errorf("CheckNew missed the lock held on shard 2 in %d of 6 surveys, want 0", missed)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if err := redlock.TrustStart(ctx, clients[0]); err != nil {
		t.Fatalf("TrustStart: %v", err)
	}
	if err := redlock.CheckNew(ctx, clients, redlock.DefaultPrefix)[0]; err != nil {
		t.Errorf("CheckNew after TrustStart on the cluster client: %v, want nil", err)
	}
}

// Issue 20, item 2: a vouch is for the primaries TrustStart found. A
// replica promoted later — here by a TAKEOVER in two of three members,
// without losing anything — has a run_id of its own: under a guard of an
// hour it is not counted (it has been up for seconds), while the vouched
// primaries of the other shards are.
func TestShardsPromotedReplicaNotVouched(t *testing.T) {
	ctx := ctxFor(t, time.Minute)
	lab, clients := vouchedShards(t, ctx)
	onShard0(t, lab.Members[:2], "Failover", func(s *redislab.Shard) error { return s.Failover(ctx) })
	c := newClient(t, clients, redlock.WithRestartGuard(time.Hour))
	promoted := lab.Members[0].Shards[0].Keys("promoted", 1)[0]
	if l, err := c.TryLock(ctx, promoted); err == nil {
		l.Unlock(ctx)
		t.Errorf("TryLock %s on promoted replicas in two of three members: granted, want ErrNodeRestarted", promoted)
	} else if !errors.Is(err, redlock.ErrNodeRestarted) {
		t.Errorf("TryLock %s on promoted replicas: %v, want ErrNodeRestarted", promoted, err)
	}
	for i, s := range lab.Members[0].Shards[1:] {
		key := s.Keys("vouched", 1)[0]
		l, err := c.TryLock(ctx, key)
		if err != nil {
			t.Errorf("shard %d: TryLock %s on vouched primaries: %v", i+1, key, err)
			continue
		}
		if err := l.Unlock(ctx); err != nil {
			t.Errorf("shard %d: Unlock: %v", i+1, err)
		}
	}
}

// Issue 20, items 1 and 2: a vouch is for a primary as it was when
// vouched. Here the vouched primary of shard 0 hands over to its replica
// (a TAKEOVER in two of three members), turns into that replica's replica,
// is cut off, misses A's grants, and is promoted back. It is the same
// process — the same run_id its vouch names — but it lacks A's keys: under
// a guard of an hour its grants must not count. Its slot's owner record
// names its replication ID of before (prelude.lua: served_ms).
func TestShardsVouchedPrimaryPromotedBackStale(t *testing.T) {
	ctx := ctxFor(t, time.Minute)
	lab, clients := vouchedShards(t, ctx)
	for _, m := range lab.Members[:2] {
		vouched := m.Shards[0].Primary()
		if err := m.Shards[0].Failover(ctx); err != nil {
			t.Fatalf("Failover: %v", err)
		}
		waitReplicating(t, ctx, vouched.Addr())
	}
	// A learns the new primaries before their replicas are cut off: a grant
	// A sent to a paused former primary would land when it is promoted back.
	a := newClient(t, clients, redlock.WithTTL(shardTTL), redlock.WithAutoRenew(false), redlock.WithRestartGuard(0))
	warm := lab.Members[0].Shards[0].Keys("warm", 1)[0]
	l := eventuallyLocked(t, 10*time.Second, "A is granted a key of shard 0", func() (*redlock.Lock, error) { return a.TryLock(ctx, warm) })
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("A: Unlock: %v", err)
	}
	onShard0(t, lab.Members[:2], "CutReplica", func(s *redislab.Shard) error { return s.CutReplica(ctx) })
	held := map[string]*redlock.Lock{}
	for _, key := range lab.Members[0].Shards[0].Keys("held", 4) {
		l, err := a.TryLock(ctx, key)
		if err != nil {
			t.Fatalf("A: TryLock %s: %v", key, err)
		}
		held[key] = l
	}
	onShard0(t, lab.Members[:2], "Failover back", func(s *redislab.Shard) error { return s.Failover(ctx) })
	requireLacks(t, ctx, lab, 0, held, 0, 1)
	b := newClient(t, clients, redlock.WithRestartGuard(time.Hour), redlock.WithAutoRenew(false))
	for key, a := range held {
		l, err := b.TryLock(ctx, key)
		// A fresh client's first calls may time out on a loaded machine
		// (no answer is no vote either way): try again while A holds.
		for try := 0; err != nil && !errors.Is(err, redlock.ErrNodeRestarted) && try < 5 && time.Now().Before(a.Until()); try++ {
			l, err = b.TryLock(ctx, key)
		}
		if err == nil {
			if a.Err() == nil && time.Now().Before(a.Until()) {
				t.Errorf("B got %s %v before the holder's Until, from vouched primaries promoted back without it", key, time.Until(a.Until()).Round(time.Millisecond))
			}
			_ = l.Unlock(ctx)
			continue
		}
		if !errors.Is(err, redlock.ErrNodeRestarted) {
			t.Errorf("TryLock %s: %v, want ErrNodeRestarted", key, err)
		}
	}
}

// waitReplicating waits until the server at addr is a replica whose link
// to its primary is up.
func waitReplicating(t *testing.T, ctx context.Context, addr string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	eventually(t, 15*time.Second, addr+" replicates its new primary", func() bool {
		info, err := rdb.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up")
	})
}
