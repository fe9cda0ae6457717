package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
)

// One extension round over locks on two shards of a cluster member whose
// shard 0 is down: the slot whose call fails fails its own lock only, the
// other lock is extended.
func TestShardExtendFailsPerSlot(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lab := redislab.StartShards(t, 1, 3)
	c, err := New(lab.ClusterClients(t), WithRestartGuard(0), WithAutoRenew(false), WithNodeTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := lab.Members[0]
	var locks []*Lock
	for _, s := range m.Shards[:2] {
		l, err := c.TryLock(ctx, s.Keys("extended", 1)[0])
		if err != nil {
			t.Fatalf("TryLock: %v", err)
		}
		locks = append(locks, l)
	}
	if err := m.Shards[0].Primary().Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	withOps(locks, func() {
		out := c.extendRound(ctx, locks, false)
		if out[0] == nil {
			t.Errorf("the lock on the killed shard extended; want an error")
		}
		if out[1] != nil {
			t.Errorf("the lock on shard 1: %v; want it extended", out[1])
		}
	})
}

// withOps runs f holding every lock's roundMu, as extendRound requires.
func withOps(locks []*Lock, f func()) {
	for _, l := range locks {
		l.roundMu.Lock()
		defer l.roundMu.Unlock()
	}
	f()
}
