package chaos_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/chaos"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A renewed lock survives the SIGKILL of one master of five: renewals go on
// through the four others for more than three TTLs, and the lock stays
// exclusive.
func TestKillOneOfFiveKeepsRenewedLock(t *testing.T) {
	lab := startLab(t, 5)
	ctx := testkit.Context(t, 30*time.Second)
	rec := chaos.NewRecorder()
	holder := newClient(t, lab.Clients(t), redlock.WithAutoRenew(true))
	rival := newClient(t, lab.Clients(t))
	l, err := holder.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	renewals := 0
	err = rec.Hold(ctx, "holder", l, func(ctx context.Context) {
		lab.Kill(t, 0)
		killed := time.Now()
		last := l.Until()
		for time.Since(killed) < 3*ttl+ttl/2 {
			if err := l.Err(); err != nil {
				t.Fatalf("lock ended %v after one master was killed: %v", time.Since(killed), err)
			}
			if until := l.Until(); until.After(last) {
				renewals, last = renewals+1, until
			}
			rivalTry(t, ctx, rec, rival, "k")
			time.Sleep(ttl / 20)
		}
	})
	if err != nil {
		t.Errorf("Unlock: %v", err)
	}
	// One renewal every TTL/3: about ten in 3.5 TTLs; a generous floor.
	if renewals < 6 {
		t.Errorf("%d renewals in %v after the kill, want ≥ 6", renewals, 3*ttl+ttl/2)
	}
	rep := report(t, rec)
	t.Logf("renewals after the kill: %d", renewals)
	if rep.Losses != 0 {
		t.Errorf("%d losses signalled, want 0", rep.Losses)
	}
}

// SIGKILL of three masters of five: renewal cannot reach a majority, and the
// holder is told — Done closed, Err ErrLockLost — before Until().
func TestKillThreeOfFiveSignalsLossBeforeValidityEnds(t *testing.T) {
	lab := startLab(t, 5)
	ctx := testkit.Context(t, 30*time.Second)
	rec := chaos.NewRecorder()
	holder := newClient(t, lab.Clients(t), redlock.WithAutoRenew(true))
	l, err := holder.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	err = rec.Hold(ctx, "holder", l, func(ctx context.Context) {
		lab.Kill(t, 0, 1, 2)
		select {
		case <-ctx.Done(): // the loss signal
		case <-time.After(2 * ttl):
			t.Errorf("no loss signalled %v after three of five masters were killed", 2*ttl)
		}
	})
	if !errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("Unlock after the loss: %v, want ErrLockLost", err)
	}
	if !errors.Is(l.Err(), redlock.ErrLockLost) {
		t.Errorf("Err() = %v, want ErrLockLost", l.Err())
	}
	rep := report(t, rec)
	if rep.Losses != 1 {
		t.Fatalf("%d losses signalled, want 1", rep.Losses)
	}
	if rep.WorstMargin <= 0 {
		t.Errorf("loss signalled %v after Until(), want before", -rep.WorstMargin)
	}
}
