package chaos_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/chaos"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// Clock-drift scenario settings: master 0's clock runs 25% fast, so it
// expires a lease of clockTTL a fifth of it early (600 ms) — more than the
// loss signal's margin before the end of validity (a tenth of the TTL), which
// absorbs smaller drifts for holders that stop when told.
const (
	fastRate     = "x1.25"
	clockTTL     = 3 * time.Second
	clockTimeout = 20 * time.Millisecond // the node timeout
	fastEarly    = clockTTL - clockTTL*100/125
)

// A fast master within the drift allowance: with drift factor 0.25 the
// validity (ttl − 25% − 2 ms) ends before the fast master drops the key, so B
// wins the lock early — but only after A was told that it ended.
func TestClockFastMasterWithinDrift(t *testing.T) {
	rep, a, b := fastClockRace(t, 0.25)
	if b == nil {
		t.Fatalf("B never obtained the lock")
	}
	if len(rep.Overlaps) > 0 {
		t.Errorf("%d overlaps with the fast clock within the drift allowance, want 0", len(rep.Overlaps))
	}
	if b.Start >= a.Start+clockTTL {
		t.Errorf("B won %v after A, not before A's lease ended on correct clocks: the fast clock did not show", b.Start-a.Start)
	}
	requireToldInTime(t, rep)
}

// A fast master beyond the drift allowance: with the default drift factor
// 0.01 (32 ms over 3 s) the fast master drops the key 600 ms early — before A
// is told, 300 ms before the end of its validity — while A still believes it
// holds the lock: B wins through it and masters 3, 4, and the two hold the
// lock together. The library cannot survive this; the test
// shows that the checker sees it.
func TestClockFastMasterBeyondDrift(t *testing.T) {
	rep, a, b := fastClockRace(t, redlock.DefaultDriftFactor)
	if b == nil {
		t.Fatalf("B never obtained the lock")
	}
	if b.Start < a.End && len(rep.Overlaps) == 0 {
		t.Errorf("B started before A ended, yet the checker found no overlap")
	}
	if len(rep.Overlaps) == 0 {
		t.Errorf("no overlap: B won %v after A started, A was told at %v", b.Start-a.Start, a.End-a.Start)
	}
}

// fastClockRace runs one race on a lab whose master 0 runs under faketime
// at fastRate. A reaches masters 0, 1, 2 only and holds "k" without renewal
// until told that its validity ends; B reaches all five and asks for "k"
// from shortly before the fast master drops A's key. It returns the checked history and
// A's and B's holds (B's nil if B never won).
func fastClockRace(t *testing.T, drift float64) (chaos.Report, *chaos.Hold, *chaos.Hold) {
	t.Helper()
	lab := fastClockLab(t)
	m := newMesh(t, lab, 2, redlock.WithTTL(clockTTL), redlock.WithNodeTimeout(clockTimeout),
		redlock.WithDriftFactor(drift), redlock.WithAutoRenew(false))
	ctx := testkit.Context(t, 30*time.Second)
	warmUp(t, m.clients...)
	m.refuse(0, 3, 4)
	rec := chaos.NewRecorder()
	la, err := m.clients[0].Lock(ctx, "k")
	if err != nil {
		t.Fatalf("A Lock through masters 0, 1, 2: %v", err)
	}
	bDone := make(chan struct{})
	go func() {
		defer close(bDone)
		// B starts asking shortly before the fast master drops A's key.
		pause(ctx, time.Until(la.Until())-fastEarly-100*time.Millisecond)
		tryUntil(t, ctx, rec, m.clients[1], "B", la.Until().Add(time.Second))
	}()
	rec.Hold(ctx, "A", la, func(ctx context.Context) { <-ctx.Done() })
	<-bDone
	rep := chaos.Check(rec.History())
	t.Logf("%s (drift factor %v: allowance %v; the fast master expires keys %v early): %s", t.Name(), drift,
		time.Duration(float64(clockTTL)*drift)+2*time.Millisecond, fastEarly, &rep)
	var a, b *chaos.Hold
	for _, h := range rec.History() {
		if h.Client == "A" {
			a = &h
		} else {
			b = &h
		}
	}
	return rep, a, b
}

// fastClockLab returns five masters: master 0 under faketime at fastRate,
// masters 1 to 4 on the real clock.
func fastClockLab(t *testing.T) *redislab.Lab {
	t.Helper()
	fast := startLab(t, 1, redislab.WithWrapper(fastClockWrapper(t)...))
	normal := startLab(t, 4)
	return &redislab.Lab{Nodes: append(fast.Nodes, normal.Nodes...)}
}

// fastClockWrapper returns the command that runs redis-server with a clock
// running at fastRate. Debian's redis-server allocates with jemalloc, which
// calls clock_gettime while libfaketime is still initializing and hangs or
// aborts (libfaketime issue #130); preloading another allocator ahead of
// libfaketime avoids that (Debian: libtcmalloc-minimal4 or libmimalloc2.0).
func fastClockWrapper(t *testing.T) []string {
	t.Helper()
	for _, pattern := range []string{"/usr/lib/*/libtcmalloc_minimal.so.4", "/usr/lib/*/libmimalloc.so.2", "/usr/lib/libtcmalloc_minimal.so.4"} {
		if found, _ := filepath.Glob(pattern); len(found) > 0 {
			return []string{"env", "LD_PRELOAD=" + found[0], "faketime", "-f", "+0 " + fastRate}
		}
	}
	why := "no libtcmalloc_minimal.so.4 or libmimalloc.so.2 to run redis-server under faketime " +
		"(Debian: apt-get install -y faketime libtcmalloc-minimal4)"
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true, so this is a failure)", why)
	}
	t.Skip(why)
	return nil
}
