package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// The watchdog keeps a 300 ms lease held for far longer than its TTL, and
// another client stays excluded throughout.
func TestWatchdogKeepsShortLeaseForSeconds(t *testing.T) {
	c, nodes, _ := lab(t, 5)
	other := newClient(t, nodes)
	ctx := ctxFor(t, 20*time.Second)
	l, err := c.TryLock(ctx, "k", redlock.WithTTL(400*time.Millisecond))
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	first := l.Until()
	end := time.Now().Add(2 * time.Second)
	probes := 0
	for time.Now().Before(end) {
		if _, err := other.TryLock(ctx, "k"); !errors.Is(err, redlock.ErrNotObtained) {
			t.Fatalf("probe %d: another client's TryLock = %v, want ErrNotObtained", probes, err)
		}
		probes++
		select {
		case <-l.Done():
			t.Fatalf("lock ended after %d probes: %v", probes, l.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if l.Err() != nil {
		t.Fatalf("Err after 2s = %v, want nil", l.Err())
	}
	if !l.Until().After(first.Add(time.Second)) {
		t.Errorf("Until moved %v in 2s, want renewals to move it by over 1s", l.Until().Sub(first))
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

// No renewal outlives Unlock: after Unlock returns, the key stays gone even
// across several renewal periods.
func TestNoRenewalAfterUnlock(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	for i := 0; i < 70; i += 3 {
		l, err := c.TryLock(ctx, "k", redlock.WithTTL(200*time.Millisecond), redlock.WithNodeTimeout(60*time.Millisecond))
		if err != nil {
			t.Fatalf("TryLock %d: %v", i, err)
		}
		time.Sleep(time.Duration(i) * time.Millisecond) // vary the phase against the 66 ms renewal period
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock %d: %v", i, err)
		}
		eventually(t, time.Second, "every node released", func() bool { return countHeld(t, nodes, "k") == 0 })
	}
}

// With a fake clock, the lock's timers are visible: the expiry and the
// renewal are armed while it is held, and none is left once Unlock returns,
// so no renewal can follow it.
func TestUnlockDisarmsEveryTimer(t *testing.T) {
	fc := clock.NewFake(time.Now())
	c, _, _ := lab(t, 3, redlock.WithClock(fc))
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	if n := fc.Sleepers(); n != 2 {
		t.Fatalf("timers armed while held = %d, want 2 (expiry, renewal)", n)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if n := fc.Sleepers(); n != 0 {
		t.Fatalf("timers armed after Unlock = %d, want 0", n)
	}
}

// The watchdog renews every TTL/3 of the lock's clock: advancing a fake clock
// by that much moves Until forward through a real quorum extension.
func TestWatchdogRenewsEveryThirdOfTTL(t *testing.T) {
	fc := clock.NewFake(time.Now())
	ttl := 3 * time.Second
	c, nodes, _ := lab(t, 3, redlock.WithClock(fc), redlock.WithTTL(ttl))
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	defer l.Unlock(ctx)
	first := l.Until()
	fc.Advance(ttl/3 - time.Millisecond)
	if l.Until() != first {
		t.Fatalf("Until moved before TTL/3")
	}
	fc.Advance(time.Millisecond)
	eventually(t, 2*time.Second, "the renewal at TTL/3", func() bool { return l.Until().Equal(first.Add(ttl / 3)) })
	for i, n := range nodes {
		if pttl := n.PTTL(ctx, redlock.DefaultPrefix+"{k}").Val(); pttl < ttl-500*time.Millisecond {
			t.Errorf("node %d PTTL after renewal = %v, want about %v", i, pttl, ttl)
		}
	}
}

func TestDoRunsUnderLockAndReleases(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	held := 0
	err := c.Do(ctx, "k", func(ctx context.Context) error {
		held = countHeld(t, nodes, "k")
		return nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if held < 2 {
		t.Errorf("nodes holding the key inside Do = %d, want a majority of 3", held)
	}
	eventually(t, time.Second, "every node released after Do", func() bool { return countHeld(t, nodes, "k") == 0 })
	boom := errors.New("boom")
	if err := c.Do(ctx, "k", func(context.Context) error { return boom }); !errors.Is(err, boom) || errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("Do returned %v, want fn's error alone", err)
	}
	eventually(t, time.Second, "every node released after a failed fn", func() bool { return countHeld(t, nodes, "k") == 0 })
}

func TestDoReleasesOnPanic(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	func() {
		defer func() {
			if recover() != "boom" {
				t.Error("panic did not propagate")
			}
		}()
		c.Do(ctx, "k", func(context.Context) error { panic("boom") })
	}()
	eventually(t, time.Second, "every node released after the panic", func() bool { return countHeld(t, nodes, "k") == 0 })
}
