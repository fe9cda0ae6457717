package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// Locking many distinct keys leaves nothing behind forever: every key the
// library writes carries a TTL, and once the fencing retention has passed
// no key is left at all.
func TestDistinctKeysLeaveNoKeyWithoutTTL(t *testing.T) {
	// Every kind of hold takes its turn: TryLock, TryLockMany, TryRLock and
	// TryAcquire (takeKind).
	const keys, workers = 10000, 16
	retention := 3 * time.Second
	c, nodes, _ := lab(t, 3, redlock.WithTTL(time.Second), redlock.WithFenceRetention(retention), redlock.WithAutoRenew(false))
	ctx := ctxFor(t, 2*time.Minute)
	// A cycle that fails (a node slower than the node timeout on a busy
	// host) is no defect here: whatever it wrote must carry a TTL all the
	// same. Failures are counted apart, and only enough successes of each
	// kind are required, so that every kind was really exercised.
	var next atomic.Int64
	var took, failed [kinds]atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := next.Add(1); i <= keys; i = next.Add(1) {
				l, err := takeKind(ctx, c, i)
				if err != nil {
					failed[i%kinds].Add(1)
					continue
				}
				took[i%kinds].Add(1)
				if err := l.Unlock(ctx); err != nil {
					failed[i%kinds].Add(1)
				}
			}
		})
	}
	wg.Wait()
	for k := range kinds {
		n, f := took[k].Load(), failed[k].Load()
		t.Logf("kind %d: %d of %d holds taken, %d takes or releases failed", k, n, keys/kinds, f)
		if n < keys/kinds/2 {
			t.Fatalf("kind %d: only %d of %d holds taken, want at least half to exercise it", k, n, keys/kinds)
		}
	}
	// Waiters that give up leave queues and their leases behind, to expire.
	for i := range 20 {
		name := fmt.Sprintf("busy:%d", i)
		held, err := c.TryAcquire(ctx, name, 1)
		if err != nil {
			t.Fatalf("TryAcquire %s: %v", name, err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
		c.Acquire(wctx, name, 1)
		c.RLock(wctx, name) // no writer: granted at once
		cancel()
		held.Unlock(ctx)
	}
	for i, n := range nodes {
		total, noTTL := keysWithoutTTL(t, ctx, n)
		if total == 0 { // the latest counters are still within their retention
			t.Errorf("node %d holds no key right after %d cycles, want the latest fencing counters", i, keys)
		}
		if noTTL != 0 {
			t.Errorf("node %d: %d of %d keys have no TTL, want 0", i, noTTL, total)
		}
	}
	eventually(t, retention+5*time.Second, "every key expired after the retention", func() bool {
		for _, n := range nodes {
			if total, _ := keysWithoutTTL(t, ctx, n); total != 0 {
				return false
			}
		}
		return true
	})
}

// keysWithoutTTL scans n and returns how many keys it holds and how many of
// them never expire, leaving out the lab's vouch (TrustStart).
func keysWithoutTTL(t *testing.T, ctx context.Context, n redis.UniversalClient) (total, noTTL int) {
	t.Helper()
	iter := n.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		if iter.Val() == redlock.TrustKey {
			continue
		}
		total++
		if ttl, err := n.PTTL(ctx, iter.Val()).Result(); err == nil && ttl == -1 {
			noTTL++
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN: %v", err)
	}
	return total, noTTL
}

// A key whose every trace was deleted from every master — its fencing state
// expired, or every master restarted empty — still gets a larger token.
func TestTokenGrowsAfterAllStateIsGone(t *testing.T) {
	c, nodes, _ := lab(t, 3, redlock.WithAutoRenew(false))
	ctx := ctxFor(t, 10*time.Second)
	var last int64
	for round := range 3 {
		l, err := c.TryLock(ctx, "k")
		if err != nil {
			t.Fatalf("round %d: TryLock: %v", round, err)
		}
		if l.Token() <= last {
			t.Fatalf("round %d: token %d after %d, want larger", round, l.Token(), last)
		}
		last = l.Token()
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("round %d: Unlock: %v", round, err)
		}
		names := redlock.Keys(redlock.DefaultPrefix, "k")
		for i, n := range nodes {
			if err := n.Del(ctx, names.Lock, names.Fence, names.Queue, names.Leases).Err(); err != nil {
				t.Fatalf("node %d: DEL: %v", i, err)
			}
		}
	}
}

// kinds is how many kinds of hold takeKind takes in turn.
const kinds = 4

// takeKind takes the i-th of a run of distinct keys, by each kind of hold in
// turn: a key, two keys at once, a reader, a permit of a limit-3 semaphore.

func takeKind(ctx context.Context, c *redlock.Client, i int64) (*redlock.Lock, error) {
	key := fmt.Sprintf("order:%d", i)
	switch i % kinds {
	case 1:
		return c.TryLockMany(ctx, []string{key, key + ":b"})
	case 2:
		return c.TryRLock(ctx, key)
	case 3:
		return c.TryAcquire(ctx, key, 3)
	}
	return c.TryLock(ctx, key)
}
