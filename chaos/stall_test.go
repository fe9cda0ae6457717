package chaos_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/chaos"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A holder A stalls past its validity — a paused process: its goroutine and
// its renewals stop (auto-renew off stands for the stopped watchdog), and it
// ignores its loss signal — then writes to the guarded store. Meanwhile
// another holder B took the lock and wrote with a larger token: A's stale
// write is rejected by the fence. A row per way B gets the lock.
func TestStalledHolderIsFenced(t *testing.T) {
	tests := []struct {
		name string
		// before runs before A takes the lock it stalls with; nil for none.
		before func(t *testing.T, ctx context.Context, lab *redislab.Lab, a *redlock.Client, rec *chaos.Recorder, store *chaos.FencedStore)
		// takeover gets B the lock while A stalls, and records B's hold and
		// timely write.
		takeover func(t *testing.T, ctx context.Context, lab *redislab.Lab, rec *chaos.Recorder, store *chaos.FencedStore) *redlock.Lock
	}{
		{"after the lease ran out", nil, lockAfterLease},
		{"through an empty restart past the TTL", lockThroughTwoDown, lockPastRestartWithMinorityPaused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lab := startLab(t, 5)
			ctx := testkit.Context(t, 30*time.Second)
			rec := chaos.NewRecorder()
			store, resourceStore := resource(t, rec)
			a := newClient(t, lab.Clients(t), redlock.WithAutoRenew(false))
			if tt.before != nil {
				tt.before(t, ctx, lab, a, rec, store)
			}
			la, err := a.Lock(ctx, "k")
			if err != nil {
				t.Fatalf("A Lock: %v", err)
			}
			var lb *redlock.Lock
			late := true
			rec.Hold(ctx, "A", la, func(context.Context) {
				mustWrite(t, store, "A", la)
				// The stall: A ignores its loss signal and sleeps through B's hold.
				lb = tt.takeover(t, ctx, lab, rec, store)
				late = store.Write("k", la.Token())
			})
			if lb == nil {
				t.Fatalf("B never held the lock")
			}
			t.Logf("A's token %d, B's %d (+%d)", la.Token(), lb.Token(), lb.Token()-la.Token())
			if lb.Token() <= la.Token() {
				t.Errorf("B's token %d not larger than the stalled A's %d", lb.Token(), la.Token())
			}
			if late {
				t.Errorf("A's write after its stall (token %d) accepted after B's (token %d), want rejected", la.Token(), lb.Token())
			}
			requireFenced(t, store, resourceStore)
			rep := report(t, rec)
			requireSafe(t, rep, 1)
			if rep.Losses != 1 || rep.WorstMargin <= 0 {
				t.Errorf("losses %d, worst margin %v: want A told once, before Until()", rep.Losses, rep.WorstMargin)
			}
		})
	}
}

// lockAfterLease locks "k" through a new client, which waits until the
// stalled holder's lease ran out, and writes under it within 5 TTLs.
func lockAfterLease(t *testing.T, ctx context.Context, lab *redislab.Lab, rec *chaos.Recorder, store *chaos.FencedStore) *redlock.Lock {
	t.Helper()
	b := newClient(t, lab.Clients(t))
	bctx, cancel := context.WithTimeout(ctx, 5*ttl)
	defer cancel()
	lb, err := b.Lock(bctx, "k")
	if err != nil {
		t.Fatalf("B Lock within %v: %v", 5*ttl, err)
	}
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
