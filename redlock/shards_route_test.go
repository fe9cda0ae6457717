package redlock_test

import (
	"testing"
	"time"
)

// Issue 20, item 3: shard 0's primary paused (SIGSTOP) in two of three
// members while A holds keys on it and B keeps trying them. Their calls
// time out; calls on the members' other shards must not wait behind them:
// no attempt on a free key of shards 1, 2 fails, and no vote there fails.
// (With one pipe per member, a batch holding a call to the paused shard
// held up its other calls past the node timeout.)
func TestShardsPausedShard(t *testing.T) {
	lab, clients, b, seen := shardedMembers(t)
	ctx := ctxFor(t, time.Minute)
	held := holdOnShard(t, ctx, lab, clients, 0, 8)
	for _, m := range lab.Members[:2] {
		p := m.Shards[0].Primary()
		if err := p.Pause(); err != nil {
			t.Fatalf("Pause: %v", err)
		}
		t.Cleanup(func() { _ = p.Resume() })
	}
	c := contendShards(t, ctx, lab, b, held, 1, 2)
	t.Logf("B: %d attempts on held keys, %d granted while held; %d attempts on free keys of shards 1, 2, %d failed; "+
		"failed votes on shards 0, 1, 2: %d, %d, %d", c.attempts.Load(), c.overlaps.Load(), c.others.Load(), c.refused.Load(),
		seen.failed[0].Load(), seen.failed[1].Load(), seen.failed[2].Load())
	if n := c.overlaps.Load(); n != 0 {
		t.Errorf("%d overlapping holds with shard 0 paused in two of three members, want 0", n)
	}
	if n := c.refused.Load(); n != 0 {
		t.Errorf("%d of %d attempts on free keys of the untouched shards failed, want 0: a paused shard delays only its own keys", n, c.others.Load())
	}
	if n := seen.failed[1].Load() + seen.failed[2].Load(); n != 0 {
		t.Errorf("%d votes on keys of the untouched shards failed, want 0", n)
	}
}
