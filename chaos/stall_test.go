package chaos_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/chaos"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A holder stalls past its validity — a paused process: its goroutine and
// its renewals stop (auto-renew off stands for the stopped watchdog) — then
// writes to the guarded store. Meanwhile another holder took the lock and
// wrote with a larger token: the stale write is rejected by the fence.
func TestHolderStallIsFenced(t *testing.T) {
	lab := startLab(t, 5)
	ctx := testCtx(t, 30*time.Second)
	rec := chaos.NewRecorder()
	var store chaos.FencedStore
	a := newClient(t, lab.Clients(t), redlock.WithAutoRenew(false))
	b := newClient(t, lab.Clients(t))
	la, err := a.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("A Lock: %v", err)
	}
	bWrote := make(chan int64, 1)
	bDone := make(chan struct{})
	go func() { // B waits for the lock, writes, and lets A resume
		defer close(bDone)
		defer close(bWrote)
		lb, err := b.Lock(ctx, "k")
		if err != nil {
			t.Errorf("B Lock: %v", err)
			return
		}
		rec.Hold(ctx, "B", lb, func(context.Context) {
			if !store.Write("k", lb.Token()) {
				t.Errorf("B's write with token %d rejected", lb.Token())
			}
			bWrote <- lb.Token()
		})
	}()
	var stale bool
	rec.Hold(ctx, "A", la, func(context.Context) {
		if !store.Write("k", la.Token()) {
			t.Errorf("A's timely write with token %d rejected", la.Token())
		}
		// The stall: A ignores the loss signal and sleeps through B's hold.
		select {
		case tb := <-bWrote:
			t.Logf("A (token %d) resumes after B wrote with token %d", la.Token(), tb)
		case <-time.After(5 * ttl):
			t.Fatalf("B did not write within %v", 5*ttl)
		}
		stale = store.Write("k", la.Token())
	})
	<-bDone // B's hold is recorded
	if stale {
		t.Errorf("A's write after its stall (token %d) accepted, want rejected", la.Token())
	}
	acc, rej := store.Counts()
	t.Logf("fenced store: %d writes accepted, %d rejected", acc, rej)
	rep := report(t, rec)
	requireSafe(t, rep, 1)
	if rep.Losses != 1 || rep.WorstMargin <= 0 {
		t.Errorf("losses %d, worst margin %v: want A told once, before Until()", rep.Losses, rep.WorstMargin)
	}
}
