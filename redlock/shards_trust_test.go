package redlock_test

import (
	"errors"
	"testing"
	"time"

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
	lab := redislab.StartShards(t, 3, 3, redislab.WithReplicas())
	clients := lab.ClusterClients(t)
	ctx := ctxFor(t, time.Minute)
	for i, c := range clients {
		if err := redlock.TrustStart(ctx, c); err != nil {
			t.Fatalf("member %d: TrustStart: %v", i, err)
		}
	}
	for _, m := range lab.Members[:2] {
		if err := m.Shards[0].Failover(ctx); err != nil {
			t.Fatalf("Failover: %v", err)
		}
	}
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
