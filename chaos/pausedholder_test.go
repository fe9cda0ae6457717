package chaos_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/chaos"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// Fencing after one empty restart past the TTL (issue 9, case 3). Masters 3
// and 4 are down while A locks and unlocks "k" a few times through 0, 1, 2,
// then holds it (renewal off) and stalls: a paused process that ignores its
// loss signal. 3 and 4 come back; master 2 crashes, stays down longer than
// the TTL (Redlock's delayed restart, allowed without persistence) and
// restarts empty. After the restart guard, 0 and 1 are paused (SIGSTOP, a
// minority) and a fresh client B locks through 2, 3, 4 — none of which
// remembers A's tokens: 2 lost them, 3 and 4 never saw them. B's token must
// still be larger than A's, so that the fenced store rejects the write A
// makes when it wakes, after B's.
func TestEmptyRestartPastTTLFencesPausedHolder(t *testing.T) {
	lab := startLab(t, 5)
	ctx := testCtx(t, 30*time.Second)
	rec := chaos.NewRecorder()
	var store chaos.FencedStore
	kill(t, lab, 3, 4)
	a := newClient(t, lab.Clients(t), redlock.WithAutoRenew(false))
	const cycles = 5
	for i := range cycles {
		l, err := a.Lock(ctx, "k")
		if err != nil {
			t.Fatalf("A Lock %d through masters 0, 1, 2: %v", i+1, err)
		}
		rec.Hold(ctx, "A", l, func(context.Context) { mustWrite(t, &store, "A", l) })
	}
	la, err := a.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("A Lock %d through masters 0, 1, 2: %v", cycles+1, err)
	}
	var lb *redlock.Lock
	late := true
	rec.Hold(ctx, "A", la, func(context.Context) {
		mustWrite(t, &store, "A", la)
		// The stall: A ignores its loss signal and sleeps through B's hold.
		lb = lockPastRestartWithMinorityPaused(t, ctx, lab, rec, &store)
		late = store.Write("k", la.Token())
	})
	if lb == nil {
		t.Fatalf("B never held the lock")
	}
	t.Logf("A's token %d, B's %d (+%d)", la.Token(), lb.Token(), lb.Token()-la.Token())
	if lb.Token() <= la.Token() {
		t.Errorf("B's token %d not larger than the paused A's %d", lb.Token(), la.Token())
	}
	if late {
		t.Errorf("A's write after its stall (token %d) accepted after B's (token %d), want rejected", la.Token(), lb.Token())
	}
	acc, rej := store.Counts()
	t.Logf("fenced store: %d writes accepted, %d rejected", acc, rej)
	rep := report(t, rec)
	requireSafe(t, rep, 1)
	if rep.Losses != 1 || rep.WorstMargin <= 0 {
		t.Errorf("losses %d, worst margin %v: want A told once, before Until()", rep.Losses, rep.WorstMargin)
	}
}

// lockPastRestartWithMinorityPaused brings masters 3 and 4 back, crashes
// master 2 for longer than the TTL and restarts it empty, waits for the
// restart guard, pauses masters 0 and 1, and locks "k" through a new client
// (new redis clients, never warmed up) — so through 2, 3 and 4 only. B writes
// under the lock; masters 0 and 1 resume once B's hold is recorded. ctx must
// not be the stalled holder's: its loss would cut the waits short.
func lockPastRestartWithMinorityPaused(t *testing.T, ctx context.Context, lab *redislab.Lab, rec *chaos.Recorder, store *chaos.FencedStore) *redlock.Lock {
	t.Helper()
	restart(t, lab, true, 3, 4)
	kill(t, lab, 2)
	pause(ctx, ttl+ttl/2) // down for longer than the TTL
	restart(t, lab, true, 2)
	restarted := time.Now()
	pause(ctx, ttl) // the restart guard (the TTL by default)
	for _, n := range []int{0, 1} {
		if err := lab.Nodes[n].Pause(); err != nil {
			t.Fatalf("pause master %d: %v", n, err)
		}
		t.Cleanup(func() { lab.Nodes[n].Resume() })
	}
	defer func() {
		for _, n := range []int{0, 1} {
			if err := lab.Nodes[n].Resume(); err != nil {
				t.Errorf("resume master %d: %v", n, err)
			}
		}
	}()
	b := newClient(t, lab.Clients(t), redlock.WithAutoRenew(false))
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

// mustWrite makes who's timely write under l, failing t if the store
// rejects it.
func mustWrite(t *testing.T, store *chaos.FencedStore, who string, l *redlock.Lock) {
	t.Helper()
	if !store.Write(l.Key(), l.Token()) {
		t.Errorf("%s's timely write with token %d rejected", who, l.Token())
	}
}
