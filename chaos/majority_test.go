package chaos_test

import (
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/chaos"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// While three masters of five are down, no acquisition succeeds; a holder
// is told of the loss before its validity ends; when the masters come back,
// service resumes.
func TestMajorityLoss(t *testing.T) {
	lab := startLab(t, 5)
	w := contend(t, lab, 2, 2)
	ctx := testkit.Context(t, time.Minute)
	long := longHold(t, ctx, w.rec, newClient(t, lab.Clients(t)))
	stop := w.start(t, 3)
	pause(ctx, 200*time.Millisecond)
	w.waitHeld(t)
	lab.Kill(t, 0, 1, 2)
	// An attempt already in flight may still count a grant made before the
	// last kill: its acquire and fence rounds end within two node timeouts.
	down := w.rec.Now() + 2*nodeTimeout
	requireLoss(t, long, 2*ttl)
	pause(ctx, ttl) // the outage goes on: acquisitions keep failing
	up := w.rec.Now()
	lab.Restart(t, false, 0, 1, 2)
	w.waitResumed(t, up, "the masters returned")
	rep := settle(t, w, stop, up)
	requireNoneBetween(t, w.rec, down, up, "3 of 5 masters were down")
	if rep.Losses == 0 || rep.WorstMargin <= 0 {
		t.Errorf("losses %d, worst margin %v: want ≥ 1 loss, each told before Until()", rep.Losses, rep.WorstMargin)
	}
	t.Logf("attempts that gave up during the run: %d", w.attempts.Load())
}

// requireNoneBetween fails t if a hold started in [from, to), while the
// fault left no majority.
func requireNoneBetween(t *testing.T, rec *chaos.Recorder, from, to time.Duration, while string) {
	t.Helper()
	if n := holdsBetween(rec, from, to); n > 0 {
		t.Errorf("%d acquisitions while %s, want 0", n, while)
	}
}

// holdsBetween counts the holds that started in [from, to).
func holdsBetween(rec *chaos.Recorder, from, to time.Duration) int {
	return holdsSince(rec, from) - holdsSince(rec, to)
}
