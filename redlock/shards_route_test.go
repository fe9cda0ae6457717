package redlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
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
		seen.logFailures(t, 1, 2)
	}
}

// renewals counts, per shard of member 0, the watchdog's extensions and
// the failed ones.
type renewals struct {
	redlock.NopObserver
	member     *redislab.Member
	ok, failed [3]atomic.Int64
}

func (r *renewals) Renewed(_ context.Context, key string, err error) {
	for i, s := range r.member.Shards {
		if s != r.member.ShardOf(redislab.Slot(key)) {
			continue
		}
		if err != nil {
			r.failed[i].Add(1)
		} else {
			r.ok[i].Add(1)
		}
	}
}

// Issue 20, item 3, batched renewal: A holds keys on shards 0 and 1, one
// watchdog schedule for all, and shard 0 is paused in two of three
// members. The renewals of shard 1's locks must not wait behind shard 0's:
// none fails, and none of those locks is lost. (One round for both shards
// had its calls to members 0 and 1 time out on shard 0's keys.)
func TestShardsPausedShardRenewals(t *testing.T) {
	lab, clients, _, _ := shardedMembers(t)
	ctx := ctxFor(t, time.Minute)
	seen := &renewals{member: lab.Members[0]}
	a := newClient(t, clients, redlock.WithTTL(shardTTL), redlock.WithRestartGuard(0), redlock.WithObserver(seen))
	var kept []*redlock.Lock
	for shard := range 2 {
		for _, key := range lab.Members[0].Shards[shard].Keys("renewed", 4) {
			l := eventuallyLocked(t, 10*time.Second, "A locks "+key, func() (*redlock.Lock, error) {
				return a.TryLock(ctx, key) // a preparation: retried on a busy host
			})
			if shard == 1 {
				kept = append(kept, l)
			}
		}
	}
	for _, m := range lab.Members[:2] {
		p := m.Shards[0].Primary()
		if err := p.Pause(); err != nil {
			t.Fatalf("Pause: %v", err)
		}
		t.Cleanup(func() { _ = p.Resume() })
	}
	eventually(t, 3*shardTTL, "three renewals of each lock on shard 1", func() bool {
		return seen.ok[1].Load()+seen.failed[1].Load() >= 3*int64(len(kept))
	})
	t.Logf("renewals on shards 0, 1: %d, %d ok, %d, %d failed", seen.ok[0].Load(), seen.ok[1].Load(), seen.failed[0].Load(), seen.failed[1].Load())
	if n := seen.failed[1].Load(); n != 0 {
		t.Errorf("%d renewals of locks on the untouched shard 1 failed, want 0", n)
	}
	for _, l := range kept {
		if err := l.Err(); err != nil {
			t.Errorf("A lost %s on the untouched shard 1: %v", l.Key(), err)
		}
	}
}
