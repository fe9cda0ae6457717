package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A lock held on exactly 3 of 5 — two masters down when it was acquired —
// does not decay: once they are back, renewals set it there too, so it
// survives the loss of one of its original three.
func TestRenewalRepairsQuorum(t *testing.T) {
	ttl := time.Second
	c, nodes, lab := lab(t, 5, redlock.WithTTL(ttl))
	lab.RequireControl(t)
	rival := newClient(t, nodes, redlock.WithTTL(ttl))
	ctx := ctxFor(t, 30*time.Second)
	lab.Kill(t, 3, 4)
	l, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock on 3 of 5: %v", err)
	}
	defer l.Unlock(ctx)
	lab.Restart(t, true, 3, 4)
	// They are counted once up for the restart guard (the TTL); until then
	// they may already hold the key.
	eventually(t, 5*ttl, "the lock set again on the masters that were down", func() bool {
		h := holders(t, nodes, "k")
		return h[3] != "" && h[3] == h[0] && h[4] == h[0]
	})
	waitCounted(t, ctx, l, 2*ttl)
	lab.Kill(t, 0)
	// Three renewal periods later it is still held, renewed by 1, 2, 3, 4.
	deadline := time.Now().Add(3 * ttl)
	for time.Now().Before(deadline) {
		if err := l.Err(); err != nil {
			t.Fatalf("lock lost after one of its original masters died: %v", err)
		}
		if _, err := rival.TryLock(ctx, "k"); err == nil {
			t.Fatal("a rival obtained the lock while it was held")
		}
		select {
		case <-l.Done():
		case <-time.After(ttl / 4):
		}
	}
	if !time.Now().Before(l.Until()) {
		t.Errorf("Until %v is in the past: renewals stopped", l.Until())
	}
}

// waitCounted waits until a renewal has moved l's Until past the moment the
// repaired masters count (their restart guard), so that their votes matter.
func waitCounted(t *testing.T, ctx context.Context, l *redlock.Lock, guard time.Duration) {
	t.Helper()
	from := time.Now().Add(guard)
	eventually(t, 3*guard, "a renewal after the restart guard", func() bool {
		return l.Until().After(from.Add(guard / 2))
	})
}

// The watchdog renews a Client's locks in batches, and a lock that cannot
// be renewed is lost alone: its 99 neighbours in the batch are kept.
func TestBatchedRenewalLosesOnlyTheFailedLock(t *testing.T) {
	const locks = 100
	ttl := 1500 * time.Millisecond
	c, nodes, _ := lab(t, 3, redlock.WithTTL(ttl))
	ctx := ctxFor(t, 30*time.Second)
	held := make([]*redlock.Lock, locks)
	for i := range held {
		l, err := c.TryLock(ctx, fmt.Sprintf("item:%d", i))
		if err != nil {
			t.Fatalf("TryLock %d: %v", i, err)
		}
		defer l.Unlock(ctx)
		held[i] = l
	}
	before := redislab.ScriptCalls(t, nodes)
	// Another owner takes lock 37's key on a majority of the masters.
	victim := redlock.Keys(redlock.DefaultPrefix, "item:37").Lock
	for _, n := range nodes[:2] {
		if err := n.HSet(ctx, victim, "owner", "intruder").Err(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-held[37].Done():
	case <-time.After(2 * ttl):
		t.Fatal("lock 37 not lost within two TTLs although a majority holds another owner")
	}
	// Two more periods: everyone else is still held and renewed.
	mark := time.Now()
	eventually(t, 3*ttl, "two more renewals of the others", func() bool {
		return held[0].Until().After(mark.Add(ttl + ttl/3))
	})
	for i, l := range held {
		if i != 37 && l.Err() != nil {
			t.Errorf("lock %d: %v, want still held (only 37 failed)", i, l.Err())
		}
	}
	// Unbatched, every period would cost locks extend calls per master.
	periods := float64(time.Since(mark)+ttl) / float64(ttl/3)
	for i, n := range redislab.ScriptCalls(t, nodes) {
		if got := n - before[i]; float64(got) > 3*periods {
			t.Errorf("node %d ran %d scripts in about %.0f renewal periods of %d locks, want a few batches per period", i, got, periods, locks)
		}
	}
}
