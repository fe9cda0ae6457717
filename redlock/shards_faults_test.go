package redlock_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// Issue 20: a slot moved by resharding while a lock on it is held, in every
// member. The keys move with MIGRATE, so no member loses the lock: B must
// not be granted it, and A, renewing, must not lose it: calls on the moved
// slots meet MOVED and ASK, and follow them (issue 20, item 3).
func TestShardsSlotMovedWhileHeld(t *testing.T) {
	lab, clients, b, _ := shardedMembers(t)
	ctx := ctxFor(t, time.Minute)
	a := newClient(t, clients, redlock.WithTTL(shardTTL), redlock.WithRestartGuard(0))
	keys := lab.Members[0].Shards[0].Keys("moved", 4)
	held := map[string]*redlock.Lock{}
	for _, key := range keys {
		l, err := a.TryLock(ctx, key)
		if err != nil {
			t.Fatalf("A: TryLock %s: %v", key, err)
		}
		held[key] = l
	}
	var moveErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, key := range keys {
			for _, m := range lab.Members {
				if err := m.MoveSlot(ctx, redislab.Slot(key), m.Shards[2]); err != nil {
					moveErr = err
					return
				}
			}
		}
	})
	c := contendShards(t, ctx, lab, b, held, 1, 2)
	wg.Wait()
	if moveErr != nil {
		t.Fatalf("MoveSlot: %v", moveErr)
	}
	lost := 0
	for _, l := range held {
		if l.Err() != nil {
			lost++
		}
	}
	t.Logf("B: %d attempts on held keys, %d granted while held; %d attempts on free keys of shards 1, 2, %d failed; A lost %d of %d locks",
		c.attempts.Load(), c.overlaps.Load(), c.others.Load(), c.refused.Load(), lost, len(held))
	if n := c.overlaps.Load(); n != 0 {
		t.Errorf("%d overlapping holds while slots moved, want 0", n)
	}
	if lost != 0 {
		t.Errorf("A lost %d locks while every member stayed healthy, want 0", lost)
	}
	if n := c.refused.Load(); n != 0 {
		t.Errorf("%d of %d attempts on free keys of the untouched shards failed while slots moved, want 0", n, c.others.Load())
	}
}

// Issue 20: shard 0's primary killed in one member (no replica) while A
// holds keys on it. The two other members keep A's lock (checked in every
// run). The killed shard must not hold up its member's other shards — no
// vote of theirs fails: calls are grouped per shard (issue 20, item 3).
func TestShardsKilledShard(t *testing.T) {
	lab, clients, b, seen := shardedMembers(t)
	ctx := ctxFor(t, time.Minute)
	held := holdOnShard(t, ctx, lab, clients, 0, 8)
	if err := lab.Members[0].Shards[0].Primary().Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	c := contendShards(t, ctx, lab, b, held, 1, 2)
	t.Logf("B: %d attempts on held keys, %d granted while held; %d attempts on free keys of shards 1, 2, %d failed; "+
		"failed votes on shards 0, 1, 2: %d, %d, %d", c.attempts.Load(), c.overlaps.Load(), c.others.Load(), c.refused.Load(),
		seen.failed[0].Load(), seen.failed[1].Load(), seen.failed[2].Load())
	if n := c.overlaps.Load(); n != 0 {
		t.Errorf("%d overlapping holds with a shard killed in one member, want 0", n)
	}
	if n := seen.failed[1].Load() + seen.failed[2].Load(); n != 0 {
		t.Errorf("%d votes on keys of the untouched shards failed, want 0: a dead shard delays only its own keys", n)
		seen.logFailures(t, 1, 2)
	}
}

// Issue 20: restart and failover at once — shard 0's primary restarted
// empty in member 0 while, in member 1, its replica that missed A's grants
// is promoted. Both lost A's keys: B must not be granted them.
func TestShardsRestartAndFailoverAtOnce(t *testing.T) {
	lab, clients, b, _ := shardedMembers(t, redislab.WithReplicas())
	ctx := ctxFor(t, time.Minute)
	s0, s1 := lab.Members[0].Shards[0], lab.Members[1].Shards[0]
	if err := s1.CutReplica(ctx); err != nil {
		t.Fatalf("CutReplica: %v", err)
	}
	held := holdOnShard(t, ctx, lab, clients, 0, 8)
	// Member 0's replica would resync the restarted primary: it is cut off
	// and left paused, so that the restart is really empty.
	if err := s0.CutReplica(ctx); err != nil {
		t.Fatalf("CutReplica: %v", err)
	}
	var restartErr error
	var wg sync.WaitGroup
	wg.Go(func() { restartErr = s0.Primary().Restart(true) })
	failErr := s1.Failover(ctx)
	wg.Wait()
	if err := errors.Join(restartErr, failErr); err != nil {
		t.Fatalf("restart and failover: %v", err)
	}
	requireLacks(t, ctx, lab, 0, held, 0, 1)
	c := contendShards(t, ctx, lab, b, held, 1, 2)
	t.Logf("B: %d attempts on held keys, %d granted while held; %d attempts on free keys of shards 1, 2, %d failed",
		c.attempts.Load(), c.overlaps.Load(), c.others.Load(), c.refused.Load())
	if n := c.overlaps.Load(); n != 0 {
		t.Errorf("%d overlapping holds after a restart and a failover at once, want 0", n)
	}
}
