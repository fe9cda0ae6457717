package chaos_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/chaos"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// lockThroughTwoDown and lockPastRestartWithMinorityPaused make the row of
// TestStalledHolderIsFenced for fencing after one empty restart past the TTL
// (issue 9, case 3). Masters 3 and 4 are down while A locks and unlocks "k"
// a few times through 0, 1, 2, then holds it (renewal off) and stalls. 3 and
// 4 come back; master 2 crashes, stays down longer than the TTL (Redlock's
// delayed restart, allowed without persistence) and restarts empty. After
// the restart guard, 0 and 1 are paused (SIGSTOP, a minority) and a fresh
// client B locks through 2, 3, 4 — none of which remembers A's tokens: 2 lost
// them, 3 and 4 never saw them. B's token must still be larger than A's, so
// that the fenced store rejects the write A makes when it wakes, after B's.
//
// lockThroughTwoDown kills masters 3 and 4, then makes A lock, write and
// unlock "k" five times through 0, 1 and 2.
func lockThroughTwoDown(t *testing.T, ctx context.Context, lab *redislab.Lab, a *redlock.Client, rec *chaos.Recorder, store *chaos.FencedStore) {
	t.Helper()
	lab.Kill(t, 3, 4)
	for i := range 5 {
		l, err := a.Lock(ctx, "k")
		if err != nil {
			t.Fatalf("A Lock %d through masters 0, 1, 2: %v", i+1, err)
		}
		rec.Hold(ctx, "A", l, func(context.Context) { mustWrite(t, store, "A", l) })
	}
}

// lockPastRestartWithMinorityPaused brings masters 3 and 4 back, crashes
// master 2 for longer than the TTL and restarts it empty, waits for the
// restart guard, pauses masters 0 and 1, and locks "k" through a new client
// (new redis clients, never warmed up) — so through 2, 3 and 4 only. B writes
// under the lock; masters 0 and 1 resume once B's hold is recorded. ctx must
// not be the stalled holder's: its loss would cut the waits short. Every
// master B reaches restarted, so none can tell it the TTLs in use: B sets
// the restart guard to the one TTL all clients here use (WithRestartGuard),
// as the docs tell operators who know it — by default it would wait
// MaxRestartGuard.
func lockPastRestartWithMinorityPaused(t *testing.T, ctx context.Context, lab *redislab.Lab, rec *chaos.Recorder, store *chaos.FencedStore) *redlock.Lock {
	t.Helper()
	lab.Restart(t, true, 3, 4)
	lab.Kill(t, 2)
	pause(ctx, ttl+ttl/2) // down for longer than the TTL
	lab.Restart(t, true, 2)
	restarted := time.Now()
	pause(ctx, ttl) // the restart guard B is told
	lab.Pause(t, 0, 1)
	defer lab.Resume(t, 0, 1)
	b := newClient(t, lab.Clients(t), redlock.WithAutoRenew(false), redlock.WithRestartGuard(ttl))
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lb, err := b.Lock(bctx, "k")
	if err != nil {
		t.Fatalf("B Lock through masters 2, 3, 4: %v", err)
	}
	// A fresh client reads a master's start from its uptime, in whole
	// seconds: it may count it up to a second after the guard.
	t.Logf("B won %v after master 2 restarted (guard %v)", time.Since(restarted).Round(time.Millisecond), ttl)
	rec.Hold(ctx, "B", lb, func(context.Context) { mustWrite(t, store, "B", lb) })
	return lb
}
