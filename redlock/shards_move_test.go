package redlock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// Issue 20: a slot moved by resharding while a lock on it is held, in every
// member. The keys move with MIGRATE, so no member loses the lock: B must
// not be granted it, and A, renewing, must not lose it. This one passes
// today; it guards the per-shard rewrite.
func TestShardsSlotMovedWhileHeld(t *testing.T) {
	issue20(t, "slots moved while locks on them are held")
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
}
